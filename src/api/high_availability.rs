//! `spec.highAvailability`: pod anti-affinity, topology spread, the PodDisruptionBudget and
//! graceful shutdown.

use super::bounded::Bounded;
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::check::{self, Out, Violation, Zero, is_too_long, quoted};

/// Entries of `topologySpreadConstraints`.
pub const TOPOLOGY_SPREAD_CONSTRAINTS: usize = 16;
/// A budget of `podDisruptionBudget` written as a string (`"100%"` has 4).
pub const BUDGET_LENGTH: usize = 16;
/// The budget when the PDB is enabled without one.
pub const DEFAULT_MIN_AVAILABLE: i32 = 1;
/// Default preStop sleep in seconds.
pub const DEFAULT_PRE_STOP_DELAY_SECONDS: i32 = 10;
/// Bounds of `preStopDelaySeconds`.
pub const PRE_STOP_DELAY_SECONDS: (i32, i32) = (1, 300);
/// Default termination grace period in seconds.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// Bounds of `terminationGracePeriodSeconds`.
pub const TERMINATION_GRACE_PERIOD_SECONDS: (i64, i64) = (1, 600);
/// The message of the rule that the grace period outlasts the preStop sleep.
pub const GRACE_MESSAGE: &str = "terminationGracePeriodSeconds must exceed preStopDelaySeconds";

/// The CEL rule of [`GRACE_MESSAGE`], with the defaults of both fields.
#[must_use]
pub fn grace_rule() -> String {
    format!(
        "!has(self.enabled) || !self.enabled || (has(self.terminationGracePeriodSeconds) ? \
         self.terminationGracePeriodSeconds : {DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS}) > \
         (has(self.preStopDelaySeconds) ? self.preStopDelaySeconds : \
         {DEFAULT_PRE_STOP_DELAY_SECONDS})"
    )
}

/// The PDB's `unhealthyPodEvictionPolicy`: `AlwaysAllow` lets a drain evict a not-ready pod even
/// when the budget is used up, so one stuck pod cannot block every node drain;
/// `IfHealthyBudget` (Kubernetes' default) counts it against the budget.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UnhealthyPodEvictionPolicy {
    /// A not-ready pod can always be evicted; it does not count against the budget.
    #[default]
    AlwaysAllow,
    /// A not-ready pod can be evicted only while the budget has room (Kubernetes' default).
    IfHealthyBudget,
}

impl UnhealthyPodEvictionPolicy {
    /// The value as the PodDisruptionBudget writes it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AlwaysAllow => "AlwaysAllow",
            Self::IfHealthyBudget => "IfHealthyBudget",
        }
    }
}

/// Anti-affinity preset.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AntiAffinityPreset {
    /// Preferred anti-affinity on `kubernetes.io/hostname` (weight 100).
    Soft,
    /// Required anti-affinity on `kubernetes.io/hostname`.
    Hard,
}

/// High-availability settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HighAvailabilitySpec {
    /// Pod anti-affinity preset; `soft` whenever `highAvailability` is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "soft"))]
    pub anti_affinity_preset: Option<AntiAffinityPreset>,

    /// Topology spread constraints, copied verbatim to the pod template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = TOPOLOGY_SPREAD_CONSTRAINTS))]
    pub topology_spread_constraints:
        Option<Bounded<TopologySpreadConstraint, TOPOLOGY_SPREAD_CONSTRAINTS>>,

    /// PodDisruptionBudget settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PdbSpec>,

    /// preStop delay and termination grace period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_shutdown: Option<GracefulShutdownSpec>,
}

/// PodDisruptionBudget settings. `minAvailable` wins when both budgets are set; neither set
/// means `minAvailable: 1`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PdbSpec {
    /// Emit a PodDisruptionBudget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Minimum available pods: an integer or a percentage such as `"50%"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = BUDGET_LENGTH))]
    pub min_available: Option<IntOrString>,
    /// Maximum unavailable pods: an integer or a percentage such as `"25%"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = BUDGET_LENGTH))]
    pub max_unavailable: Option<IntOrString>,
    /// Whether a drain may evict a not-ready pod when the budget is used up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "AlwaysAllow"))]
    pub unhealthy_pod_eviction_policy: Option<UnhealthyPodEvictionPolicy>,
}

/// Graceful shutdown: a preStop sleep and a pod termination grace period.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": grace_rule(),
    "message": GRACE_MESSAGE,
    "fieldPath": ".terminationGracePeriodSeconds",
    "reason": "FieldValueInvalid"
}]))]
#[serde(rename_all = "camelCase")]
pub struct GracefulShutdownSpec {
    /// Turn graceful shutdown on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Seconds the preStop hook sleeps before memcached gets SIGTERM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = PRE_STOP_DELAY_SECONDS.0, max = PRE_STOP_DELAY_SECONDS.1),
        extend("default" = DEFAULT_PRE_STOP_DELAY_SECONDS)
    )]
    pub pre_stop_delay_seconds: Option<i32>,
    /// Pod termination grace period; must exceed `preStopDelaySeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = TERMINATION_GRACE_PERIOD_SECONDS.0, max = TERMINATION_GRACE_PERIOD_SECONDS.1),
        extend("default" = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS)
    )]
    pub termination_grace_period_seconds: Option<i64>,
}

/// The PodDisruptionBudget with its defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Pdb<'a> {
    /// The one budget.
    pub budget: Budget<'a>,
    /// Which unhealthy pods may be evicted.
    pub unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy,
}

/// The PodDisruptionBudget's one budget.
#[derive(Clone, Debug, PartialEq)]
pub enum Budget<'a> {
    /// `minAvailable` (also the default, `1`).
    MinAvailable(&'a IntOrString),
    /// `maxUnavailable`, only when `minAvailable` is unset.
    MaxUnavailable(&'a IntOrString),
}

/// Graceful-shutdown timings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GracefulShutdown {
    /// Seconds the preStop hook sleeps.
    pub pre_stop_delay_seconds: i32,
    /// Pod termination grace period.
    pub termination_grace_period_seconds: i64,
}

/// The high-availability settings with every default applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HighAvailability<'a> {
    /// Anti-affinity preset (`soft` whenever `highAvailability` is present).
    pub anti_affinity: Option<AntiAffinityPreset>,
    /// Topology spread constraints (never an empty list).
    pub topology_spread: Option<&'a [TopologySpreadConstraint]>,
    /// The PDB, when enabled.
    pub pdb: Option<Pdb<'a>>,
    /// Graceful shutdown, when enabled.
    pub graceful_shutdown: Option<GracefulShutdown>,
}

static MIN_AVAILABLE_DEFAULT: IntOrString = IntOrString::Int(DEFAULT_MIN_AVAILABLE);

impl<'a> HighAvailability<'a> {
    /// Resolves the defaults of `spec.highAvailability`.
    #[must_use]
    pub fn of(ha: Option<&'a HighAvailabilitySpec>) -> Self {
        let Some(ha) = ha else {
            return Self::default();
        };
        let pdb = ha
            .pod_disruption_budget
            .as_ref()
            .filter(|p| p.enabled == Some(true));
        let graceful = ha
            .graceful_shutdown
            .as_ref()
            .filter(|g| g.enabled == Some(true));
        Self {
            anti_affinity: Some(ha.anti_affinity_preset.unwrap_or(AntiAffinityPreset::Soft)),
            topology_spread: ha
                .topology_spread_constraints
                .as_deref()
                .filter(|t| !t.is_empty()),
            pdb: pdb.map(|p| Pdb {
                budget: match (&p.min_available, &p.max_unavailable) {
                    (Some(min), _) => Budget::MinAvailable(min),
                    (None, Some(max)) => Budget::MaxUnavailable(max),
                    (None, None) => Budget::MinAvailable(&MIN_AVAILABLE_DEFAULT),
                },
                unhealthy_pod_eviction_policy: p.unhealthy_pod_eviction_policy.unwrap_or_default(),
            }),
            graceful_shutdown: graceful.map(|g| GracefulShutdown {
                pre_stop_delay_seconds: g
                    .pre_stop_delay_seconds
                    .filter(|s| *s != 0)
                    .unwrap_or(DEFAULT_PRE_STOP_DELAY_SECONDS),
                termination_grace_period_seconds: g
                    .termination_grace_period_seconds
                    .filter(|s| *s != 0)
                    .unwrap_or(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS),
            }),
        }
    }
}

/// `"50%"` → 50.
#[must_use]
pub fn parse_percent(text: &str) -> Option<u32> {
    let digits = text.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

const PERCENT_FORMAT: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";

/// Whether a budget value is an integer >= 0 or a percentage from 0% to 100%.
fn budget(out: &mut Out, parent: &str, name: &str, value: Option<&IntOrString>) {
    // The field path is built only for a violation.
    let field = || format!("{parent}.{name}");
    match value {
        Some(IntOrString::String(s)) if is_too_long(s, BUDGET_LENGTH) => {
            out.push(Violation::too_long(field(), BUDGET_LENGTH));
        }
        Some(IntOrString::Int(n)) if *n < 0 => {
            out.push(Violation::invalid(
                field(),
                n,
                "must be greater than or equal to 0",
            ));
        }
        Some(IntOrString::String(s)) => match parse_percent(s) {
            Some(p) if p <= 100 => {}
            Some(_) => out.push(Violation::invalid(
                field(),
                quoted(s),
                "must not be greater than 100%",
            )),
            None => out.push(Violation::invalid(field(), quoted(s), PERCENT_FORMAT)),
        },
        _ => {}
    }
}

/// The schema rules of `spec.highAvailability`.
pub(super) fn validate(out: &mut Out, ha: &HighAvailabilitySpec) {
    let spread = ha.topology_spread_constraints.as_ref();
    let field = "spec.highAvailability.topologySpreadConstraints";
    check::bounded(out, field, spread);
    if let Some(pdb) = &ha.pod_disruption_budget {
        let field = "spec.highAvailability.podDisruptionBudget";
        budget(out, field, "minAvailable", pdb.min_available.as_ref());
        budget(out, field, "maxUnavailable", pdb.max_unavailable.as_ref());
    }
    if let Some(g) = &ha.graceful_shutdown {
        let delay = g.pre_stop_delay_seconds.map(i64::from);
        let (min, max) = PRE_STOP_DELAY_SECONDS;
        let bounds = (i64::from(min), i64::from(max));
        check::range(
            out,
            "spec.highAvailability.gracefulShutdown.preStopDelaySeconds",
            delay,
            bounds,
            Zero::MeansDefault,
        );
        let grace = g.termination_grace_period_seconds;
        let bounds = TERMINATION_GRACE_PERIOD_SECONDS;
        check::range(
            out,
            "spec.highAvailability.gracefulShutdown.terminationGracePeriodSeconds",
            grace,
            bounds,
            Zero::MeansDefault,
        );
    }
}

/// The cross-field rules of `spec.highAvailability` (the CRD's CEL rule on graceful shutdown).
/// Both-set, neither-set and `minAvailable >= replicas` are valid PDB inputs: the
/// `DisruptionBudgetBlocking` condition reports a budget that blocks node drains.
pub(super) fn validate_rules(out: &mut Out, ha: &HighAvailability<'_>) {
    if let Some(g) = ha.graceful_shutdown
        && g.termination_grace_period_seconds <= i64::from(g.pre_stop_delay_seconds)
    {
        let (grace, delay) = (g.termination_grace_period_seconds, g.pre_stop_delay_seconds);
        out.push(Violation::invalid(
            "spec.highAvailability.gracefulShutdown.terminationGracePeriodSeconds",
            grace,
            format!(
                "terminationGracePeriodSeconds ({grace}) must exceed preStopDelaySeconds ({delay})"
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_block_means_soft_anti_affinity() {
        let ha = HighAvailabilitySpec::default();
        let e = HighAvailability::of(Some(&ha));
        assert_eq!(e.anti_affinity, Some(AntiAffinityPreset::Soft));
        assert_eq!(HighAvailability::of(None).anti_affinity, None);
    }

    #[test]
    fn pdb_budget_precedence_and_default() {
        let pdb = |min, max| HighAvailabilitySpec {
            pod_disruption_budget: Some(PdbSpec {
                enabled: Some(true),
                min_available: min,
                max_unavailable: max,
                unhealthy_pod_eviction_policy: None,
            }),
            ..HighAvailabilitySpec::default()
        };
        let budget = |ha: &HighAvailabilitySpec| {
            HighAvailability::of(Some(ha)).pdb.map(|p| match p.budget {
                Budget::MinAvailable(v) => ("min", v.clone()),
                Budget::MaxUnavailable(v) => ("max", v.clone()),
            })
        };
        let both = pdb(Some(IntOrString::Int(2)), Some(IntOrString::Int(1)));
        assert_eq!(budget(&both), Some(("min", IntOrString::Int(2))));
        let pct = IntOrString::String("25%".into());
        assert_eq!(budget(&pdb(None, Some(pct.clone()))), Some(("max", pct)));
        assert_eq!(budget(&pdb(None, None)), Some(("min", IntOrString::Int(1))));
    }

    #[test]
    fn unhealthy_pods_are_always_evictable_unless_asked_otherwise() {
        let policy = |set| {
            let ha = HighAvailabilitySpec {
                pod_disruption_budget: Some(PdbSpec {
                    enabled: Some(true),
                    unhealthy_pod_eviction_policy: set,
                    ..PdbSpec::default()
                }),
                ..HighAvailabilitySpec::default()
            };
            HighAvailability::of(Some(&ha))
                .pdb
                .map(|p| p.unhealthy_pod_eviction_policy)
        };
        assert_eq!(policy(None), Some(UnhealthyPodEvictionPolicy::AlwaysAllow));
        let keep = Some(UnhealthyPodEvictionPolicy::IfHealthyBudget);
        assert_eq!(policy(keep), keep);
        let parsed: UnhealthyPodEvictionPolicy =
            serde_json::from_str("\"IfHealthyBudget\"").expect("the Kubernetes spelling");
        assert_eq!(parsed.as_str(), "IfHealthyBudget");
        assert!(serde_json::from_str::<UnhealthyPodEvictionPolicy>("\"alwaysAllow\"").is_err());
    }

    #[test]
    fn the_grace_rule_says_the_defaults() {
        let rule = grace_rule();
        assert!(rule.contains("? self.terminationGracePeriodSeconds : 30) > "));
        assert!(rule.ends_with("? self.preStopDelaySeconds : 10)"));
    }
}
