//! The HorizontalPodAutoscaler scaling the workload (Deployment or StatefulSet), with canonical
//! quantities in its metrics.

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget,
};

use super::{ChildKind, labels};
use crate::api::autoscaling::Autoscaling;
use crate::api::quantity;

fn canonical_target(target: &mut MetricTarget) {
    for q in [&mut target.value, &mut target.average_value]
        .into_iter()
        .flatten()
    {
        *q = quantity::canonical(q);
    }
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

/// The desired HorizontalPodAutoscaler named `name`, scaling the workload of the same name (a
/// Deployment or a StatefulSet).
#[must_use]
pub fn build(name: &str, a: &Autoscaling, workload: ChildKind) -> HorizontalPodAutoscaler {
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
                api_version: Some(workload.api_version().to_owned()),
                kind: workload.kind().to_owned(),
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
