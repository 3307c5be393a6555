//! Zone-by-zone rollouts: which zones of `spec.zones` get the desired pod template.
//!
//! A change to the pod template (image, arguments, a rotation that restarts the pods) reaches
//! one zone's workload at a time, in the order of `spec.zones.names`. The next zone keeps the
//! template it is observed with until every zone before it carries the desired template and
//! runs all its pods, updated and ready (the sync judges it with `ObservedChild::settled`). The rule reads only
//! what is observed (each workload's [`ANNOTATION`] and rollout counters), so a hook restarted
//! mid-rollout carries on where the last one stopped.

use k8s_openapi::api::core::v1::PodTemplateSpec;

/// Workload annotation: a hash of the pod template the hook gave the workload, so the next
/// sync can tell whether the workload already carries the desired template.
pub const ANNOTATION: &str = "memcached.c5c3.io/template-hash";

/// A zone's workload as a sync observes it, for its rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// No workload is observed: it is created with the desired template.
    Missing,
    /// The workload is observed.
    Observed {
        /// It carries the desired pod template.
        current: bool,
        /// Its pods all run its template and are ready (the sync judges it with `ObservedChild::settled`).
        settled: bool,
    },
}

impl ZoneState {
    /// Carries the desired template and runs it everywhere.
    fn done(self) -> bool {
        self == Self::Observed {
            current: true,
            settled: true,
        }
    }

    /// Carries the desired template but does not run it everywhere yet.
    fn rolling(self) -> bool {
        self == Self::Observed {
            current: true,
            settled: false,
        }
    }
}

/// For each zone of `zones` (in `spec.zones.names` order), whether it gets the desired pod
/// template (`true`) or keeps the one it is observed with (`false`).
///
/// A zone without a workload gets it (it is being created), and so does one that carries it
/// already. Any other zone gets it only when every zone before it is done (carries the desired
/// template, settled) and no zone after it is still rolling it out: so a sync never starts a
/// second zone while one rolls.
#[must_use]
pub fn given(zones: &[ZoneState]) -> Vec<bool> {
    zones
        .iter()
        .enumerate()
        .map(|(i, z)| match z {
            ZoneState::Missing | ZoneState::Observed { current: true, .. } => true,
            ZoneState::Observed { current: false, .. } => {
                zones[..i].iter().all(|e| e.done()) && !zones[i + 1..].iter().any(|l| l.rolling())
            }
        })
        .collect()
}

/// The hash of a pod template, as [`ANNOTATION`] records it: 16 hex digits of the BLAKE3 hash
/// of its JSON encoding (the same template always encodes to the same bytes).
#[must_use]
pub fn template_hash(template: &PodTemplateSpec) -> String {
    let json = serde_json::to_vec(template).unwrap_or_default();
    let digest = blake3::hash(&json);
    hex::encode(&digest.as_bytes()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    use ZoneState::{Missing, Observed};

    const OLD: ZoneState = Observed {
        current: false,
        settled: true,
    };
    const OLD_ROLLING: ZoneState = Observed {
        current: false,
        settled: false,
    };
    const NEW: ZoneState = Observed {
        current: true,
        settled: true,
    };
    const NEW_ROLLING: ZoneState = Observed {
        current: true,
        settled: false,
    };
    const ALL: [ZoneState; 5] = [Missing, OLD, OLD_ROLLING, NEW, NEW_ROLLING];

    /// The table of the rollout order: what the zones are observed as, which get the template.
    const CASES: &[(&str, &[ZoneState], &[bool])] = &[
        ("all zones current", &[NEW, NEW, NEW], &[true, true, true]),
        (
            "change just made: only the first zone gets it",
            &[OLD, OLD, OLD],
            &[true, false, false],
        ),
        (
            "first zone rolling: the others held",
            &[NEW_ROLLING, OLD, OLD],
            &[true, false, false],
        ),
        (
            "first done, the second starts",
            &[NEW, OLD, OLD],
            &[true, true, false],
        ),
        (
            "second done, the third starts",
            &[NEW, NEW, OLD],
            &[true, true, true],
        ),
        (
            "a zone in the middle not ready holds the rest",
            &[NEW, OLD_ROLLING, OLD],
            &[true, true, false],
        ),
        (
            "a done zone that loses a pod holds the later zones",
            &[NEW_ROLLING, NEW, OLD],
            &[true, true, false],
        ),
        (
            "a zone in the middle missing is created; the later ones wait for it",
            &[NEW, Missing, OLD],
            &[true, true, false],
        ),
        (
            "a new zone added is created at once with the desired template",
            &[NEW, NEW, Missing],
            &[true, true, true],
        ),
        (
            "first sync: every zone created",
            &[Missing, Missing, Missing],
            &[true, true, true],
        ),
        (
            "a later zone still rolling holds an earlier one",
            &[OLD, NEW_ROLLING, OLD],
            &[false, true, false],
        ),
        (
            "a second change mid-rollout restarts from the first zone",
            &[OLD_ROLLING, OLD, OLD],
            &[true, false, false],
        ),
    ];

    #[test]
    fn the_rollout_order_table() {
        for (what, zones, want) in CASES {
            assert_eq!(given(zones), *want, "{what}");
            assert_opens_at_most_one(zones);
        }
    }

    /// A restarted hook sees only the observed zones: the same states give the same answer,
    /// whatever came before.
    #[test]
    fn a_restart_mid_rollout_resumes_from_what_is_observed() {
        let mid = [NEW, NEW_ROLLING, OLD, OLD];
        assert_eq!(given(&mid), given(&mid.clone()));
        assert_eq!(given(&mid), [true, true, false, false]);
    }

    /// Zones given a template they do not run yet, counting the zones that already roll it.
    fn rolling_after(zones: &[ZoneState]) -> usize {
        given(zones)
            .iter()
            .zip(zones)
            .filter(|(given, z)| match z {
                Missing => false,
                Observed { current, settled } => **given && !(*current && *settled),
            })
            .count()
    }

    /// Zones this sync gives a template they are not observed with.
    fn opened(zones: &[ZoneState]) -> usize {
        given(zones)
            .iter()
            .zip(zones)
            .filter(|(given, z)| **given && matches!(z, Observed { current: false, .. }))
            .count()
    }

    fn assert_opens_at_most_one(zones: &[ZoneState]) {
        let opened = opened(zones);
        assert!(opened <= 1, "{zones:?} opens {opened} zones");
        let rolling = zones.iter().filter(|z| z.rolling()).count();
        if opened == 1 {
            assert_eq!(rolling, 0, "{zones:?} opens a zone while one rolls");
        }
        // What rolls after this sync: what rolled before, plus at most the zone opened.
        assert!(rolling_after(zones) <= rolling.max(1), "{zones:?}");
    }

    fn combinations(n: usize) -> Vec<Vec<ZoneState>> {
        (0..n).fold(vec![Vec::new()], |acc, _| {
            acc.into_iter()
                .flat_map(|prefix| {
                    ALL.iter().map(move |s| {
                        let mut next = prefix.clone();
                        next.push(*s);
                        next
                    })
                })
                .collect()
        })
    }

    /// Over every combination of 1 to 5 zones: a sync never opens two zones, never opens one
    /// while another rolls, and opens the first zone that is not done, or none.
    #[test]
    fn no_sync_ever_opens_two_zones() {
        for n in 1..=5 {
            for zones in combinations(n) {
                assert_opens_at_most_one(&zones);
                let give = given(&zones);
                if let Some(i) = give
                    .iter()
                    .zip(&zones)
                    .position(|(g, z)| *g && matches!(z, Observed { current: false, .. }))
                {
                    assert!(zones[..i].iter().all(|z| z.done()), "{zones:?}");
                }
            }
        }
    }

    /// From a change made to settled zones, syncs interleaved with the workloads' progress (each
    /// rolling zone settles a few syncs later): the zones roll one by one, in order, to the end.
    #[test]
    fn a_rollout_runs_zone_by_zone_in_order_to_the_end() {
        for delay in 0..3 {
            let mut zones = vec![OLD; 4];
            let mut order = Vec::new();
            let mut waited = 0;
            for _ in 0..64 {
                let give = given(&zones);
                for (i, (z, g)) in zones.iter_mut().zip(&give).enumerate() {
                    if *g && !matches!(z, Observed { current: true, .. }) {
                        *z = NEW_ROLLING;
                        order.push(i);
                    }
                }
                assert!(
                    zones.iter().filter(|z| z.rolling()).count() <= 1,
                    "{zones:?}"
                );
                if waited == delay {
                    for z in &mut zones {
                        if z.rolling() {
                            *z = NEW;
                        }
                    }
                    waited = 0;
                } else {
                    waited += 1;
                }
            }
            assert_eq!(zones, vec![NEW; 4]);
            assert_eq!(order, [0, 1, 2, 3]);
        }
    }

    #[test]
    fn the_hash_is_stable_and_follows_the_template() {
        let a = PodTemplateSpec::default();
        let b = PodTemplateSpec {
            metadata: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("x".to_owned()),
                ..Default::default()
            }),
            spec: None,
        };
        assert_eq!(template_hash(&a), template_hash(&a.clone()));
        assert_ne!(template_hash(&a), template_hash(&b));
        assert_eq!(template_hash(&a).len(), 16);
    }
}
