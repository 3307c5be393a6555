//! The HorizontalPodAutoscaler (spec.md Part 2 §c.5).

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::labels;
use crate::api::effective::Autoscaling;
use crate::api::quantity;

fn canonical(q: &mut Option<Quantity>) {
    if let Some(q) = q
        && let Ok(text) = quantity::canonicalize(&q.0)
    {
        q.0 = text;
    }
}

fn canonical_target(target: &mut MetricTarget) {
    canonical(&mut target.value);
    canonical(&mut target.average_value);
}

/// The targets of a metric (at most one is set), mutable for canonicalisation.
fn targets_mut(metric: &mut MetricSpec) -> impl Iterator<Item = &mut MetricTarget> {
    [
        metric.resource.as_mut().map(|m| &mut m.target),
        metric.container_resource.as_mut().map(|m| &mut m.target),
        metric.pods.as_mut().map(|m| &mut m.target),
        metric.object.as_mut().map(|m| &mut m.target),
        metric.external.as_mut().map(|m| &mut m.target),
    ]
    .into_iter()
    .flatten()
}

/// The targets of a metric with the JSON name of their source, for validation.
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

/// The desired HorizontalPodAutoscaler named `name`, scaling the Deployment of the same name.
#[must_use]
pub fn build(name: &str, a: &Autoscaling) -> HorizontalPodAutoscaler {
    let mut metrics = a.metrics.clone();
    for metric in &mut metrics {
        for target in targets_mut(metric) {
            canonical_target(target);
        }
    }
    HorizontalPodAutoscaler {
        metadata: labels::metadata(name),
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".to_owned()),
                kind: "Deployment".to_owned(),
                name: name.to_owned(),
            },
            min_replicas: a.min_replicas,
            max_replicas: a.max_replicas.unwrap_or(1),
            metrics: Some(metrics),
            behavior: Some(a.behavior.clone()),
        }),
        status: None,
    }
}
