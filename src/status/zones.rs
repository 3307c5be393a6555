//! The `ZoneDisruption` condition: which zone's disruption budget lets pods go and why the
//! others block, phrased from the budget rule's answer ([`budgets`](crate::workload::budgets)).

use super::{SpecCondition, ZONE_DISRUPTION};
use crate::api::Condition;
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

/// The condition of the budgets of `zones` (in spec order), phrasing why the budget rule
/// ([`decide`](crate::workload::budgets::decide)) answered them: `True` while any budget blocks,
/// `False` while every zone is whole; [`ZONES_STARTING`] until every zone has been whole once.
#[must_use]
pub fn condition(zones: &[&str], budgets: &Budgets) -> SpecCondition {
    let others = |zone: usize| named(zones, (0..zones.len()).filter(|&i| i != zone));
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
        Why::Outage(short) => (
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

    #[test]
    fn starting_zones_are_phrased_as_starting() {
        let zones = ["zone-a", "zone-b", "zone-c"];
        let starting = Budgets {
            open: vec![false; 3],
            why: Why::Starting(vec![1, 2]),
        };
        let c = condition(&zones, &starting);
        assert_eq!((c.status, c.reason), (true, ZONES_STARTING));
        assert!(c.message.contains("every zone blocks"), "{}", c.message);
        // Once the rule no longer says so, its own reasons: a later loss of every zone is an
        // outage, not a start.
        let outage = Budgets {
            open: vec![false; 3],
            why: Why::Outage(vec![0, 1, 2]),
        };
        assert_eq!(condition(&zones, &outage).reason, ZONE_OUTAGE);
    }

    #[test]
    fn the_message_names_the_zones() {
        let zones = ["zone-a", "zone-b", "zone-c"];
        let budgets = |why| Budgets {
            open: vec![false; 3],
            why,
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
}
