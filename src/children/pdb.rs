//! The PodDisruptionBudget, and what it allows (for the `DisruptionBudgetBlocking` condition;
//! docs/behaviour.md).

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::labels;
use super::zone::Zone;
use crate::api::high_availability::{Budget, Pdb, parse_percent};

/// The desired PodDisruptionBudget named `name` with its one budget (int or percent kept) and
/// its policy for unhealthy pods.
#[must_use]
pub fn build(name: &str, pdb: &Pdb<'_>) -> PodDisruptionBudget {
    let (min_available, max_unavailable) = match &pdb.budget {
        Budget::MinAvailable(v) => (Some((*v).clone()), None),
        Budget::MaxUnavailable(v) => (None, Some((*v).clone())),
    };
    PodDisruptionBudget {
        metadata: labels::metadata(name),
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(labels::selector(name)),
            min_available,
            max_unavailable,
            unhealthy_pod_eviction_policy: Some(
                pdb.unhealthy_pod_eviction_policy.as_str().to_owned(),
            ),
        }),
        status: None,
    }
}

/// The desired budget of `zone` of the Memcached `name`, `<name>-<zone>`, selecting that zone's
/// pods only: the user's budget while the zone may be disrupted (`open`, decided by the zones'
/// budget rule), else `maxUnavailable: 0`.
#[must_use]
pub fn build_zone(name: &str, zone: Zone<'_>, pdb: &Pdb<'_>, open: bool) -> PodDisruptionBudget {
    let blocked = IntOrString::Int(0);
    let budget = if open {
        pdb.budget.clone()
    } else {
        Budget::MaxUnavailable(&blocked)
    };
    let mut out = build(name, &Pdb { budget, ..*pdb });
    out.metadata.name = Some(zone.child_name(name));
    out.metadata.labels = Some(zone.labelled(labels::base(name)));
    if let Some(spec) = &mut out.spec {
        spec.selector = Some(zone.selector(name));
    }
    out
}

/// Pods a budget value stands for at `replicas`; percentages round up, as Kubernetes'
/// disruption controller scales them.
fn scaled(value: &IntOrString, replicas: i32) -> i64 {
    match value {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(s) => {
            let percent = i64::from(parse_percent(s).unwrap_or(0));
            (percent * i64::from(replicas) + 99) / 100
        }
    }
}

/// Voluntary disruptions the budget allows when all `replicas` pods are healthy.
#[must_use]
pub fn disruptions_allowed(budget: &Budget<'_>, replicas: i32) -> i64 {
    let replicas_wide = i64::from(replicas);
    match budget {
        Budget::MinAvailable(v) => (replicas_wide - scaled(v, replicas)).max(0),
        Budget::MaxUnavailable(v) => scaled(v, replicas).min(replicas_wide).max(0),
    }
}

/// The budget as `minAvailable 2` / `maxUnavailable 25%`, for messages.
#[must_use]
pub fn describe(budget: &Budget<'_>) -> String {
    let text = |v: &IntOrString| match v {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    };
    match budget {
        Budget::MinAvailable(v) => format!("minAvailable {}", text(v)),
        Budget::MaxUnavailable(v) => format!("maxUnavailable {}", text(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::high_availability::UnhealthyPodEvictionPolicy;

    fn int(n: i32) -> IntOrString {
        IntOrString::Int(n)
    }
    fn pct(s: &str) -> IntOrString {
        IntOrString::String(s.to_owned())
    }

    #[test]
    fn allowed_disruptions_follow_the_disruption_controller() {
        assert_eq!(disruptions_allowed(&Budget::MinAvailable(&int(1)), 3), 2);
        assert_eq!(disruptions_allowed(&Budget::MinAvailable(&int(3)), 3), 0);
        assert_eq!(disruptions_allowed(&Budget::MinAvailable(&int(5)), 3), 0);
        assert_eq!(
            disruptions_allowed(&Budget::MinAvailable(&pct("50%")), 3),
            1
        );
        assert_eq!(
            disruptions_allowed(&Budget::MinAvailable(&pct("67%")), 3),
            0
        );
        assert_eq!(
            disruptions_allowed(&Budget::MinAvailable(&pct("100%")), 4),
            0
        );
        assert_eq!(disruptions_allowed(&Budget::MaxUnavailable(&int(0)), 3), 0);
        assert_eq!(
            disruptions_allowed(&Budget::MaxUnavailable(&pct("0%")), 3),
            0
        );
        assert_eq!(
            disruptions_allowed(&Budget::MaxUnavailable(&pct("25%")), 3),
            1
        );
        assert_eq!(disruptions_allowed(&Budget::MaxUnavailable(&int(1)), 3), 1);
    }

    #[test]
    fn budget_types_are_preserved() {
        let pdb = |budget| Pdb {
            budget,
            unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy::AlwaysAllow,
        };
        let half = pct("50%");
        let p = build("cache", &pdb(Budget::MinAvailable(&half)));
        let spec = p.spec.unwrap();
        assert_eq!(
            spec.unhealthy_pod_eviction_policy.as_deref(),
            Some("AlwaysAllow")
        );
        assert_eq!(spec.min_available, Some(pct("50%")));
        assert_eq!(spec.max_unavailable, None);
        let one = int(1);
        let p = build("cache", &pdb(Budget::MaxUnavailable(&one)));
        let spec = p.spec.unwrap();
        assert_eq!(
            (spec.min_available, spec.max_unavailable),
            (None, Some(int(1)))
        );
    }
}
