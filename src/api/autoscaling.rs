//! `spec.autoscaling`: the HorizontalPodAutoscaler, with the webhook's metric and behaviour
//! defaults, and its rules on `spec.replicas` and `spec.resources`.

use k8s_openapi::api::autoscaling::v2::{
    HPAScalingRules, HorizontalPodAutoscalerBehavior, MetricSpec, MetricTarget,
    ResourceMetricSource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::MemcachedSpec;
use super::check::{self, Out, Violation, Zero};

/// Entries of `metrics`.
pub const METRICS: usize = 16;
/// Bounds of `minReplicas` and `maxReplicas`.
pub const REPLICAS: (i32, i32) = (1, i32::MAX);
/// The default metric's CPU utilisation target, in percent.
pub const DEFAULT_CPU_UTILIZATION: i32 = 80;
/// The default behaviour's scale-down stabilisation window, in seconds.
pub const DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS: i32 = 300;

/// CEL rule (on the spec): `replicas` is unset while autoscaling is enabled.
pub const REPLICAS_RULE: &str = "!(has(self.autoscaling) && has(self.autoscaling.enabled) && \
    self.autoscaling.enabled) || !has(self.replicas)";
/// The message of [`REPLICAS_RULE`].
pub const REPLICAS_MESSAGE: &str =
    "spec.replicas and spec.autoscaling.enabled are mutually exclusive";
/// CEL rule (on the spec): CPU utilisation metrics (the default metric included) need a CPU
/// request.
pub const CPU_REQUEST_RULE: &str = "!(has(self.autoscaling) && has(self.autoscaling.enabled) && \
    self.autoscaling.enabled) || (has(self.resources) && has(self.resources.requests) && \
    'cpu' in self.resources.requests) || (has(self.autoscaling.metrics) && \
    size(self.autoscaling.metrics) > 0 && !self.autoscaling.metrics.exists(m, m.type == \
    'Resource' && has(m.resource) && m.resource.name == 'cpu' && m.resource.target.type == \
    'Utilization'))";
/// The message of [`CPU_REQUEST_RULE`].
pub const CPU_REQUEST_MESSAGE: &str =
    "resources.requests.cpu is required when using CPU utilization metrics";
/// CEL rule: an enabled block has `maxReplicas`.
pub const MAX_REPLICAS_RULE: &str = "!has(self.enabled) || !self.enabled || has(self.maxReplicas)";
/// The message of [`MAX_REPLICAS_RULE`].
pub const MAX_REPLICAS_MESSAGE: &str = "maxReplicas is required when autoscaling is enabled";
/// CEL rule: `minReplicas` does not exceed `maxReplicas`.
pub const MIN_MAX_RULE: &str = "!has(self.enabled) || !self.enabled || !has(self.minReplicas) || \
    !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas";
/// The message of [`MIN_MAX_RULE`].
pub const MIN_MAX_MESSAGE: &str = "minReplicas must not exceed maxReplicas";

/// Autoscaling settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": MAX_REPLICAS_RULE,
        "message": MAX_REPLICAS_MESSAGE,
        "fieldPath": ".maxReplicas",
        "reason": "FieldValueRequired"
    },
    {
        "rule": MIN_MAX_RULE,
        "message": MIN_MAX_MESSAGE,
        "fieldPath": ".minReplicas",
        "reason": "FieldValueInvalid"
    }
]))]
#[serde(rename_all = "camelCase")]
pub struct AutoscalingSpec {
    /// Emit a HorizontalPodAutoscaler and leave replicas to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Lower bound of replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = REPLICAS.0))]
    pub min_replicas: Option<i32>,
    /// Upper bound of replicas (required when enabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = REPLICAS.0))]
    pub max_replicas: Option<i32>,
    /// Metrics; defaults to CPU utilisation 80%.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = METRICS))]
    pub metrics: Option<Vec<MetricSpec>>,
    /// Scaling behaviour; defaults to a 300 s scale-down stabilisation window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<HorizontalPodAutoscalerBehavior>,
}

/// Autoscaling, when enabled (with the webhook's metric and behaviour defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct Autoscaling {
    /// Lower bound, as set.
    pub min_replicas: Option<i32>,
    /// Upper bound, as set.
    pub max_replicas: Option<i32>,
    /// Metrics (CPU utilisation 80% when empty).
    pub metrics: Vec<MetricSpec>,
    /// Behaviour (scale-down stabilisation 300 s when absent).
    pub behavior: HorizontalPodAutoscalerBehavior,
}

/// The webhook's default metric: CPU utilisation 80%.
fn default_metrics() -> Vec<MetricSpec> {
    vec![MetricSpec {
        type_: "Resource".to_owned(),
        resource: Some(ResourceMetricSource {
            name: "cpu".to_owned(),
            target: MetricTarget {
                type_: "Utilization".to_owned(),
                average_utilization: Some(DEFAULT_CPU_UTILIZATION),
                ..MetricTarget::default()
            },
        }),
        ..MetricSpec::default()
    }]
}

/// The webhook's default behaviour: scale-down stabilisation of 300 s.
fn default_behavior() -> HorizontalPodAutoscalerBehavior {
    HorizontalPodAutoscalerBehavior {
        scale_down: Some(HPAScalingRules {
            stabilization_window_seconds: Some(DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS),
            ..HPAScalingRules::default()
        }),
        scale_up: None,
    }
}

impl Autoscaling {
    /// Resolves the defaults of `spec.autoscaling`; `None` unless it is enabled.
    #[must_use]
    pub fn of(autoscaling: Option<&AutoscalingSpec>) -> Option<Self> {
        let a = autoscaling.filter(|a| a.enabled == Some(true))?;
        Some(Self {
            min_replicas: a.min_replicas,
            max_replicas: a.max_replicas,
            metrics: a
                .metrics
                .clone()
                .filter(|m| !m.is_empty())
                .unwrap_or_else(default_metrics),
            behavior: a.behavior.clone().unwrap_or_else(default_behavior),
        })
    }

    /// The lowest replica count the HPA may choose.
    #[must_use]
    pub fn lowest_replicas(&self) -> i32 {
        self.min_replicas.unwrap_or(REPLICAS.0)
    }
}

/// The targets of a metric (at most one is set) with the JSON name of their source.
pub fn targets(metric: &MetricSpec) -> impl Iterator<Item = (&'static str, &MetricTarget)> {
    [
        metric.resource.as_ref().map(|m| ("resource", &m.target)),
        metric
            .container_resource
            .as_ref()
            .map(|m| ("containerResource", &m.target)),
        metric.pods.as_ref().map(|m| ("pods", &m.target)),
        metric.object.as_ref().map(|m| ("object", &m.target)),
        metric.external.as_ref().map(|m| ("external", &m.target)),
    ]
    .into_iter()
    .flatten()
}

/// The schema rules of `spec.autoscaling`, and the quantities of its metric targets.
pub(super) fn validate(out: &mut Out, a: &AutoscalingSpec) {
    let bounds = (i64::from(REPLICAS.0), i64::from(REPLICAS.1));
    let (min, max) = (a.min_replicas.map(i64::from), a.max_replicas.map(i64::from));
    check::range(
        out,
        "spec.autoscaling.minReplicas",
        min,
        bounds,
        Zero::IsAValue,
    );
    check::range(
        out,
        "spec.autoscaling.maxReplicas",
        max,
        bounds,
        Zero::IsAValue,
    );
    let metrics = check::items(
        out,
        "spec.autoscaling.metrics",
        a.metrics.as_deref(),
        METRICS,
    );
    for (index, metric) in metrics.iter().enumerate() {
        for (source, target) in targets(metric) {
            let values = [
                ("value", &target.value),
                ("averageValue", &target.average_value),
            ];
            for (name, value) in values {
                if let Some(q) = value {
                    let field = format!("spec.autoscaling.metrics[{index}].{source}.target.{name}");
                    check::quantity(out, field, &q.0);
                }
            }
        }
    }
}

fn is_cpu_utilization(metric: &MetricSpec) -> bool {
    metric.type_ == "Resource"
        && metric
            .resource
            .as_ref()
            .is_some_and(|r| r.name == "cpu" && r.target.type_ == "Utilization")
}

/// The cross-field rules of autoscaling (the CRD's CEL rules on the block and on the spec).
pub(super) fn validate_rules(out: &mut Out, a: &Autoscaling, spec: &MemcachedSpec) {
    if let Some(replicas) = spec.replicas {
        out.push(Violation::invalid(
            "spec.replicas",
            replicas,
            REPLICAS_MESSAGE,
        ));
    }
    match (a.min_replicas, a.max_replicas) {
        (_, None) => {
            out.push(Violation::required(
                "spec.autoscaling.maxReplicas",
                MAX_REPLICAS_MESSAGE,
            ));
        }
        (Some(min), Some(max)) if min > max => out.push(Violation::invalid(
            "spec.autoscaling.minReplicas",
            min,
            format!("minReplicas ({min}) must not exceed maxReplicas ({max})"),
        )),
        _ => {}
    }
    let has_cpu_request = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .is_some_and(|r| r.contains_key("cpu"));
    if a.metrics.iter().any(is_cpu_utilization) && !has_cpu_request {
        out.push(Violation::required(
            "spec.resources.requests.cpu",
            CPU_REQUEST_MESSAGE,
        ));
    }
}
