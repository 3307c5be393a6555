//! The budget rule over every combination of zones it can observe.

use super::*;

/// Zones from a picture: per zone `o`/`c` (observed budget open or closed) then `+`/`-`/`x`
/// (whole, short, or short for longer than the outage timeout), e.g. `"o+ c- cx"`.
fn zones(picture: &str) -> Vec<ZoneFacts> {
    picture
        .split_whitespace()
        .map(|z| ZoneFacts {
            open: z.starts_with('o'),
            short: z.ends_with('-') || z.ends_with('x'),
            lost: z.ends_with('x'),
        })
        .collect()
}

/// The answer as a picture: `o`/`c` per zone.
fn answer(budgets: &Budgets) -> String {
    budgets
        .open
        .iter()
        .map(|&o| if o { "o" } else { "c" })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_combination_of_whole_and_short_zones_from_the_steady_state() {
    // Three zones whose budgets are all open, as while every zone has been whole.
    let table = [
        ("o+ o+ o+", "o o o", Why::AllWhole),
        ("o- o+ o+", "o c c", Why::Disrupted(0)),
        ("o+ o- o+", "c o c", Why::Disrupted(1)),
        ("o+ o+ o-", "c c o", Why::Disrupted(2)),
        ("o- o- o+", "c c c", Why::Outage(vec![0, 1])),
        ("o- o+ o-", "c c c", Why::Outage(vec![0, 2])),
        ("o+ o- o-", "c c c", Why::Outage(vec![1, 2])),
        ("o- o- o-", "c c c", Why::Outage(vec![0, 1, 2])),
    ];
    for (observed, want, why) in table {
        let got = decide(&zones(observed), false);
        assert_eq!((answer(&got).as_str(), got.why), (want, why), "{observed}");
    }
}

#[test]
fn every_combination_while_one_zone_holds_the_allowance() {
    // Zone 0 holds the allowance (its budget open, the others closed).
    let table = [
        ("o+ c+ c+", "c c c", Why::Settling),
        ("o- c+ c+", "o c c", Why::Disrupted(0)),
        ("o+ c- c+", "c c c", Why::HandingOver(1)),
        ("o+ c+ c-", "c c c", Why::HandingOver(2)),
        ("o- c- c+", "c c c", Why::Outage(vec![0, 1])),
        ("o- c+ c-", "c c c", Why::Outage(vec![0, 2])),
        ("o+ c- c-", "c c c", Why::Outage(vec![1, 2])),
        ("o- c- c-", "c c c", Why::Outage(vec![0, 1, 2])),
    ];
    for (observed, want, why) in table {
        let got = decide(&zones(observed), false);
        assert_eq!((answer(&got).as_str(), got.why), (want, why), "{observed}");
    }
}

#[test]
fn every_combination_while_every_budget_blocks() {
    let table = [
        ("c+ c+ c+", "o o o", Why::AllWhole),
        ("c- c+ c+", "o c c", Why::Disrupted(0)),
        ("c+ c- c+", "c o c", Why::Disrupted(1)),
        ("c+ c+ c-", "c c o", Why::Disrupted(2)),
        ("c- c- c+", "c c c", Why::Outage(vec![0, 1])),
        ("c- c- c-", "c c c", Why::Outage(vec![0, 1, 2])),
    ];
    for (observed, want, why) in table {
        let got = decide(&zones(observed), false);
        assert_eq!((answer(&got).as_str(), got.why), (want, why), "{observed}");
    }
}

#[test]
fn a_zone_seen_whole_hands_the_allowance_back_over_two_syncs() {
    // Sync 1: zone a is drained.
    let first = decide(&zones("o- o+ o+"), false);
    assert_eq!(answer(&first), "o c c");
    // Sync 2: zone a is whole again: every budget blocks, none reopens yet.
    let second = decide(&zones("o+ c+ c+"), false);
    assert_eq!(
        (answer(&second).as_str(), second.why),
        ("c c c", Why::Settling)
    );
    // Sync 3: the budgets as sync 2 wrote them, every zone whole: all reopen.
    let third = decide(&zones("c+ c+ c+"), false);
    assert_eq!(answer(&third), "o o o");
}

#[test]
fn a_drain_moving_to_another_zone_waits_a_sync() {
    // Zone a holds the allowance and is whole; zone b is drained meanwhile.
    let first = decide(&zones("o+ c- c+"), false);
    assert_eq!(
        (answer(&first).as_str(), first.why),
        ("c c c", Why::HandingOver(1))
    );
    // The next sync sees every budget blocking: zone b gets the allowance.
    let second = decide(&zones("c+ c- c+"), false);
    assert_eq!(answer(&second), "c o c");
}

#[test]
fn two_short_zones_block_every_budget() {
    for observed in ["o- o- o+", "o- c- c+", "c+ c- c-", "o- o- o-"] {
        let got = decide(&zones(observed), false);
        assert_eq!(answer(&got), "c c c", "{observed}");
        assert!(matches!(got.why, Why::Outage(_)), "{observed}");
    }
}

#[test]
fn starting_zones_block_until_every_zone_is_whole_then_all_open_at_once() {
    let table = [
        // Created: no budget observed yet (a missing budget counts as open).
        ("o- o- o-", "c c c", Why::Starting(vec![0, 1, 2])),
        ("o+ o+ o-", "c c c", Why::Starting(vec![2])),
        // Created closed, the pods coming up zone by zone: no zone gets the allowance.
        ("c+ c- c-", "c c c", Why::Starting(vec![1, 2])),
        ("c+ c+ c-", "c c c", Why::Starting(vec![2])),
        // Every zone whole: every budget opens in this sync, with nothing to close.
        ("c+ c+ c+", "o o o", Why::AllWhole),
    ];
    for (observed, want, why) in table {
        let got = decide(&zones(observed), true);
        assert_eq!((answer(&got).as_str(), got.why), (want, why), "{observed}");
    }
}

#[test]
fn a_lost_zone_stops_blocking_the_others() {
    let table = [
        // A zone that never came up, past the timeout: the others' budgets open.
        ("c+ c+ cx", true, "o o c", Why::AllWhole),
        ("o+ o+ cx", false, "o o c", Why::AllWhole),
        // A drain in a healthy zone while one is lost: that zone holds the allowance.
        ("o- c+ cx", false, "o c c", Why::Disrupted(0)),
        ("o- o+ cx", false, "o c c", Why::Disrupted(0)),
        ("c+ o+ cx c-", false, "c c c c", Why::HandingOver(3)),
        // Still starting among the others: every budget blocks.
        ("c+ c- cx", true, "c c c", Why::Starting(vec![1])),
        // Two short among the others: an outage.
        ("c- c- cx", false, "c c c", Why::Outage(vec![0, 1])),
        // A lost zone whose budget is still open closes it first, with every other.
        ("o+ o+ ox", false, "c c c", Why::Losing(vec![2])),
        ("o- c+ ox", false, "c c c", Why::Losing(vec![2])),
        // Every zone lost.
        ("cx cx", false, "c c", Why::Outage(vec![0, 1])),
    ];
    for (observed, starting, want, why) in table {
        let got = decide(&zones(observed), starting);
        assert_eq!((answer(&got).as_str(), got.why), (want, why), "{observed}");
        let lost: Vec<usize> = observed
            .split_whitespace()
            .enumerate()
            .filter(|(_, z)| z.ends_with('x'))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(got.lost, lost, "{observed}");
    }
}

#[test]
fn a_zone_whole_again_is_no_longer_lost_and_blocks_until_the_budgets_settle() {
    // Zone c came back: its budget is closed, the others open; every budget closes, then
    // all reopen.
    let first = decide(&zones("o+ o+ c+"), false);
    assert_eq!(
        (answer(&first).as_str(), first.why),
        ("c c c", Why::Settling)
    );
    assert_eq!(answer(&decide(&zones("c+ c+ c+"), false)), "o o o");
}

/// A workload with `ready` ready pods and, when `budget` is given, a budget observed with
/// `(disruptedPods, currentHealthy, expectedPods)`.
fn observed(ready: i32, budget: Option<(usize, i32, i32)>) -> ZoneFacts {
    let workload: ObservedChild = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "cache-a"},
        "status": {"readyReplicas": ready}
    }))
    .expect("workload");
    let budget: Option<ObservedChild> = budget.map(|(disrupted, healthy, expected)| {
        let pods: serde_json::Map<String, serde_json::Value> = (0..disrupted)
            .map(|i| (format!("cache-a-{i}"), "2026-12-01T00:00:00Z".into()))
            .collect();
        serde_json::from_value(serde_json::json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "cache-a"},
            "spec": {"maxUnavailable": 1},
            "status": {"disruptedPods": pods, "currentHealthy": healthy,
                       "expectedPods": expected}
        }))
        .expect("budget")
    });
    ZoneFacts::observe(Some(&workload), 3, budget.as_ref())
}

/// What a zone of 3 pods is observed as: short when its workload counts fewer ready pods,
/// or when its budget has let a pod go (listed in `disruptedPods`, or fewer healthy pods
/// than it covers) before the workload counts it.
#[test]
fn a_zone_is_short_by_its_ready_pods_or_by_what_its_budget_let_go() {
    let table = [
        ("whole, no budget", 3, None, false),
        ("whole, budget untouched", 3, Some((0, 3, 3)), false),
        ("fewer ready pods", 2, Some((0, 3, 3)), true),
        ("a pod evicted, not yet counted", 3, Some((1, 3, 3)), true),
        (
            "a pod evicted and counted unhealthy",
            3,
            Some((1, 2, 3)),
            true,
        ),
        ("fewer healthy than covered", 3, Some((0, 2, 3)), true),
        ("more healthy than covered", 3, Some((0, 4, 3)), false),
        ("a budget that covers no pod yet", 3, Some((0, 0, 0)), false),
    ];
    for (what, ready, budget, short) in table {
        assert_eq!(observed(ready, budget).short, short, "{what}");
    }
}

#[test]
fn an_observed_budget_is_open_unless_it_blocks_and_a_missing_one_counts_open() {
    assert!(observed(3, None).open);
    assert!(observed(3, Some((0, 3, 3))).open);
    let blocking: ObservedChild = serde_json::from_value(serde_json::json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "cache-a"}, "spec": {"maxUnavailable": 0}
    }))
    .expect("budget");
    assert!(!ZoneFacts::observe(None, 3, Some(&blocking)).open);
}

/// The rule over what a drain shows before the workload counts it: the zone whose budget
/// let a pod go holds the allowance, and the other zones block.
#[test]
fn a_budget_that_let_a_pod_go_is_a_disruption_of_its_zone() {
    let evicted = ZoneFacts {
        open: true,
        ..observed(3, Some((1, 3, 3)))
    };
    let whole = observed(3, Some((0, 3, 3)));
    let got = decide(&[whole, evicted, whole], false);
    assert_eq!(
        (answer(&got).as_str(), got.why),
        ("c o c", Why::Disrupted(1))
    );
}

/// Every observed state of `n` zones: each zone open or closed, whole or short.
fn all_states(n: usize) -> impl Iterator<Item = Vec<ZoneFacts>> {
    (0..4_u32.pow(u32::try_from(n).unwrap_or(0))).map(move |code| {
        (0..n)
            .map(|i| {
                let digit = (code >> (2 * i)) & 3;
                ZoneFacts {
                    open: digit & 1 == 1,
                    short: digit & 2 == 2,
                    lost: false,
                }
            })
            .collect()
    })
}

/// Every observed state of `n` zones: each zone open or closed, whole, short or lost.
fn all_states_with_lost(n: usize) -> impl Iterator<Item = Vec<ZoneFacts>> {
    (0..6_u32.pow(u32::try_from(n).unwrap_or(0))).map(move |code| {
        (0..n)
            .map(|i| {
                let digit = (code / 6_u32.pow(u32::try_from(i).unwrap_or(0))) % 6;
                ZoneFacts {
                    open: digit % 2 == 1,
                    short: digit >= 2,
                    lost: digit >= 4,
                }
            })
            .collect()
    })
}

#[test]
fn lost_zones_block_themselves_and_the_others_follow_the_rule() {
    for (n, starting) in (2..=5).flat_map(|n| [(n, false), (n, true)]) {
        for state in all_states_with_lost(n) {
            let got = decide(&state, starting);
            let opens = (0..n).any(|i| got.open[i] && !state[i].open);
            let closes = (0..n).any(|i| !got.open[i] && state[i].open);
            assert!(!(opens && closes), "{state:?} -> {got:?}");
            let lost: Vec<usize> = (0..n).filter(|&i| state[i].lost).collect();
            assert_eq!(got.lost, lost, "{state:?}");
            assert!(lost.iter().all(|&i| !got.open[i]), "{state:?} -> {got:?}");
            let counted: Vec<usize> = (0..n).filter(|i| !lost.contains(i)).collect();
            let short: Vec<usize> = counted
                .iter()
                .copied()
                .filter(|&i| state[i].short)
                .collect();
            let open: Vec<usize> = (0..n).filter(|&i| got.open[i]).collect();
            if !short.is_empty() {
                assert!(open.len() <= 1, "{state:?} -> {got:?}");
                assert!(open.iter().all(|i| short.contains(i)), "{state:?}");
            }
            // From what it wrote, the rule settles where the zones that are not lost
            // would settle without them.
            let mut now = state.clone();
            for _ in 0..3 {
                let step = decide(&now, starting);
                for (zone, open) in now.iter_mut().zip(step.open) {
                    zone.open = open;
                }
            }
            let want: Vec<bool> = match short.as_slice() {
                _ if counted.is_empty() => vec![false; n],
                [] => (0..n).map(|i| !lost.contains(&i)).collect(),
                [one] if !starting => (0..n).map(|i| i == *one).collect(),
                _ => vec![false; n],
            };
            let settled: Vec<bool> = now.iter().map(|z| z.open).collect();
            assert_eq!(settled, want, "{state:?}");
        }
    }
}

#[test]
fn no_answer_opens_two_zones_while_a_disruption_is_observed() {
    for (n, starting) in (2..=5).flat_map(|n| [(n, false), (n, true)]) {
        for state in all_states(n) {
            let got = decide(&state, starting);
            let short: Vec<usize> = (0..n).filter(|&i| state[i].short).collect();
            let open: Vec<usize> = (0..n).filter(|&i| got.open[i]).collect();
            if !short.is_empty() {
                assert!(open.len() <= 1, "{state:?} -> {got:?}");
                assert!(
                    open.iter().all(|i| short.contains(i)),
                    "{state:?} -> {got:?}"
                );
            }
            if short.len() >= 2 {
                assert!(open.is_empty(), "{state:?} -> {got:?}");
            }
        }
    }
}

#[test]
fn no_answer_opens_a_budget_while_it_closes_another() {
    for (n, starting) in (2..=5).flat_map(|n| [(n, false), (n, true)]) {
        for state in all_states(n) {
            let got = decide(&state, starting);
            let opens = (0..n).any(|i| got.open[i] && !state[i].open);
            let closes = (0..n).any(|i| !got.open[i] && state[i].open);
            assert!(!(opens && closes), "{state:?} -> {got:?}");
        }
    }
}

#[test]
fn the_budgets_settle_within_two_syncs_of_what_they_wrote() {
    for (n, starting) in (2..=5).flat_map(|n| [(n, false), (n, true)]) {
        for state in all_states(n) {
            let mut now = state.clone();
            for _ in 0..2 {
                let got = decide(&now, starting);
                for (zone, open) in now.iter_mut().zip(got.open) {
                    zone.open = open;
                }
            }
            let short: Vec<usize> = (0..n).filter(|&i| state[i].short).collect();
            let want: Vec<bool> = match short.as_slice() {
                [] => vec![true; n],
                [one] if !starting => (0..n).map(|i| i == *one).collect(),
                _ => vec![false; n],
            };
            let settled: Vec<bool> = now.iter().map(|z| z.open).collect();
            assert_eq!(settled, want, "{state:?}");
            assert_eq!(
                decide(&now, starting).open,
                want,
                "a fixed point: {state:?}"
            );
        }
    }
}
