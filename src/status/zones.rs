//! The `ZoneDisruption` condition: which zone's disruption budget lets pods go and why the
//! others block, phrased from the budget rule's answer ([`budgets`](crate::workload::budgets)).

use super::{SpecCondition, ZONE_DISRUPTION};
use crate::api::{Condition, ZoneStatus};
use crate::workload::budgets::{Budgets, Why};

/// Reason while every zone is whole and every budget is the user's.
pub const ALL_ZONES_WHOLE: &str = "AllZonesWhole";
/// Reason while one short zone may be disrupted and the others block.
pub const ZONE_DISRUPTED: &str = "ZoneDisrupted";
/// Reason while every budget blocks for one sync before a short zone gets the allowance.
pub const HANDING_OVER: &str = "HandingOver";
/// Reason while every budget blocks for one sync before all reopen.
pub const SETTLING: &str = "Settling";
/// Reason while two or more zones are short and every budget blocks.
pub const ZONE_OUTAGE: &str = "ZoneOutage";
/// Reason from the zones' creation (or the budgets' first sync) until every zone has been whole
/// once: the budgets follow the same rule, but no zone is disrupted, they are starting.
pub const ZONES_STARTING: &str = "ZonesStarting";
/// Reason while a zone has been short for longer than `spec.zones.outageTimeoutSeconds`: its
/// budget blocks, and it no longer blocks the other zones (unless the others are starting).
pub const ZONE_LOST: &str = "ZoneLost";

/// Whether the zones were starting at the last sync: the parent's `previous` conditions have no
/// `ZoneDisruption` yet or say [`ZONES_STARTING`]. Derived from the status the cluster holds, so
/// a restarted hook reads the same.
#[must_use]
pub fn were_starting(previous: &[Condition]) -> bool {
    let before = previous.iter().find(|c| c.type_ == ZONE_DISRUPTION);
    before.is_none_or(|c| c.reason == ZONES_STARTING)
}

/// `zones` named, joined with `, `.
fn named(zones: &[&str], indices: impl IntoIterator<Item = usize>) -> String {
    indices
        .into_iter()
        .filter_map(|i| zones.get(i).copied())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The condition of the budgets of `status` (the zones' entries, in spec order), phrasing why
/// the budget rule ([`decide`](crate::workload::budgets::decide)) answered them: `True` while
/// any budget blocks, `False` while every zone is whole; [`ZONES_STARTING`] until every zone
/// (but the lost ones) has been whole once; [`ZONE_LOST`] while a zone is lost.
#[must_use]
pub fn condition(status: &[ZoneStatus], budgets: &Budgets) -> SpecCondition {
    let zones: Vec<&str> = status.iter().map(|z| z.name.as_str()).collect();
    let among = among(&zones, budgets);
    if budgets.lost.is_empty() {
        return among;
    }
    let lost: Vec<String> = budgets
        .lost
        .iter()
        .filter_map(|&i| status.get(i))
        .map(|z| match &z.short_since {
            Some(since) => format!("{} (short since {since})", z.name),
            None => z.name.clone(),
        })
        .collect();
    if among.reason == ZONES_STARTING {
        // Still the start: the reason stays, so that the next sync reads the zones as starting.
        let message = format!(
            "{} Zones short for longer than spec.zones.outageTimeoutSeconds no longer count: {}",
            among.message,
            lost.join(", ")
        );
        return SpecCondition { message, ..among };
    }
    let message = if matches!(budgets.why, Why::Losing(_)) {
        format!(
            "Zones short for longer than spec.zones.outageTimeoutSeconds: {}. Every zone blocks \
             until the next sync, then the other zones' budgets follow the rule among \
             themselves and theirs keep blocking",
            lost.join(", ")
        )
    } else {
        format!(
            "Zones short for longer than spec.zones.outageTimeoutSeconds: {}. Their budgets \
             block and they no longer block the other zones. {}",
            lost.join(", "),
            among.message
        )
    };
    SpecCondition {
        status: true,
        reason: ZONE_LOST,
        message,
    }
}

/// The zones whose budgets allow no voluntary disruption now, named; `None` when every zone's
/// budget is the user's.
#[must_use]
pub fn blocking(status: &[ZoneStatus], budgets: &Budgets) -> Option<String> {
    let zones: Vec<&str> = status.iter().map(|z| z.name.as_str()).collect();
    let closed: Vec<usize> = (0..budgets.open.len())
        .filter(|&i| !budgets.open[i])
        .collect();
    (!closed.is_empty()).then(|| named(&zones, closed))
}

/// The condition as the rule answered for the zones that are not lost.
fn among(zones: &[&str], budgets: &Budgets) -> SpecCondition {
    let counted = |i: usize, zone: usize| i != zone && !budgets.lost.contains(&i);
    let others = |zone: usize| named(zones, (0..zones.len()).filter(|&i| counted(i, zone)));
    let (status, reason, message) = match &budgets.why {
        Why::AllWhole => (
            false,
            ALL_ZONES_WHOLE,
            "Every zone has all its pods ready: each zone's budget allows what \
             highAvailability.podDisruptionBudget asks"
                .to_owned(),
        ),
        Why::Disrupted(zone) => (
            true,
            ZONE_DISRUPTED,
            format!(
                "Zone {} may be disrupted: it is short of ready pods or its budget let a pod \
                 go; zones {} block all disruptions (maxUnavailable 0) until it is whole again",
                named(zones, [*zone]),
                others(*zone)
            ),
        ),
        Why::HandingOver(zone) => (
            true,
            HANDING_OVER,
            format!(
                "Zone {} is short of ready pods while another zone's budget was open: every \
                 zone blocks until the next sync, then zone {} may be disrupted",
                named(zones, [*zone]),
                named(zones, [*zone])
            ),
        ),
        Why::Settling => (
            true,
            SETTLING,
            "Every zone has all its pods ready again: every zone blocks until the next sync, \
             then every budget reopens"
                .to_owned(),
        ),
        Why::Starting(_) => (
            true,
            ZONES_STARTING,
            "The zones are starting: not every zone has had all its pods ready yet; every zone \
             blocks voluntary disruptions until every zone is whole"
                .to_owned(),
        ),
        // A lost zone is short too; `condition` phrases the lost zones.
        Why::Outage(short) | Why::Losing(short) => (
            true,
            ZONE_OUTAGE,
            format!(
                "Zones {} are short of ready pods: every zone blocks all disruptions until at \
                 most one zone is short",
                named(zones, short.iter().copied())
            ),
        ),
    };
    SpecCondition {
        status,
        reason,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(names: &[&str]) -> Vec<ZoneStatus> {
        names
            .iter()
            .map(|n| ZoneStatus {
                name: (*n).to_owned(),
                ..ZoneStatus::default()
            })
            .collect()
    }

    #[test]
    fn starting_zones_are_phrased_as_starting() {
        let zones = status(&["zone-a", "zone-b", "zone-c"]);
        let starting = Budgets {
            open: vec![false; 3],
            why: Why::Starting(vec![1, 2]),
            lost: Vec::new(),
        };
        let c = condition(&zones, &starting);
        assert_eq!((c.status, c.reason), (true, ZONES_STARTING));
        assert!(c.message.contains("every zone blocks"), "{}", c.message);
        // Once the rule no longer says so, its own reasons: a later loss of every zone is an
        // outage, not a start.
        let outage = Budgets {
            open: vec![false; 3],
            why: Why::Outage(vec![0, 1, 2]),
            lost: Vec::new(),
        };
        assert_eq!(condition(&zones, &outage).reason, ZONE_OUTAGE);
    }

    #[test]
    fn the_message_names_the_zones() {
        let zones = status(&["zone-a", "zone-b", "zone-c"]);
        let budgets = |why| Budgets {
            open: vec![false; 3],
            why,
            lost: Vec::new(),
        };
        let c = condition(&zones, &budgets(Why::Disrupted(1)));
        assert_eq!((c.status, c.reason), (true, ZONE_DISRUPTED));
        assert!(
            c.message.starts_with("Zone zone-b may be disrupted"),
            "{}",
            c.message
        );
        assert!(
            c.message.contains("zones zone-a, zone-c block"),
            "{}",
            c.message
        );
        let c = condition(&zones, &budgets(Why::Outage(vec![0, 2])));
        assert_eq!(c.reason, ZONE_OUTAGE);
        assert!(c.message.starts_with("Zones zone-a, zone-c are short"));
        let c = condition(&zones, &budgets(Why::AllWhole));
        assert_eq!((c.status, c.reason), (false, ALL_ZONES_WHOLE));
        assert_eq!(condition(&zones, &budgets(Why::Settling)).reason, SETTLING);
        let c = condition(&zones, &budgets(Why::HandingOver(2)));
        assert!(c.message.contains("then zone zone-c may be disrupted"));
    }

    #[test]
    fn a_lost_zone_is_named_with_since_when_and_the_others_phrased_as_the_rule_says() {
        let mut zones = status(&["zone-a", "zone-b", "zone-c"]);
        zones[2].short_since = Some("2026-12-01T10:00:00Z".to_owned());
        let budgets = |why| Budgets {
            open: vec![true, true, false],
            why,
            lost: vec![2],
        };
        let c = condition(&zones, &budgets(Why::AllWhole));
        assert_eq!((c.status, c.reason), (true, ZONE_LOST));
        assert!(
            c.message
                .contains("zone-c (short since 2026-12-01T10:00:00Z)"),
            "{}",
            c.message
        );
        assert!(
            c.message.contains("Every zone has all its pods ready"),
            "{}",
            c.message
        );
        let c = condition(&zones, &budgets(Why::Disrupted(0)));
        assert!(c.message.contains("zones zone-b block"), "{}", c.message);
        let c = condition(&zones, &budgets(Why::Losing(vec![2])));
        assert_eq!(c.reason, ZONE_LOST);
        assert!(
            c.message.contains("Every zone blocks until the next sync"),
            "{}",
            c.message
        );
        // The others still starting: the zones are starting, lost zone or not.
        let c = condition(&zones, &budgets(Why::Starting(vec![1])));
        assert_eq!(c.reason, ZONES_STARTING);
        assert!(
            c.message.contains("no longer count: zone-c"),
            "{}",
            c.message
        );
    }
}
