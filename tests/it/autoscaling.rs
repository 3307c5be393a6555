//! `spec.autoscaling`: the HorizontalPodAutoscaler, the replicas it owns, and the budget under it.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Value, json};

use crate::common::{child, condition, decoded, render, strict, sync_value, typed};

#[test]
fn autoscaling() {
    let spec = json!({"resources": {"requests": {"cpu": "100m"}}, "autoscaling": {"enabled": true, "maxReplicas": 5}});
    let r = render(spec.clone());
    assert!(
        typed::<Deployment>(&r)
            .spec
            .expect("spec")
            .replicas
            .is_none(),
        "absent on the first create"
    );
    assert_eq!(
        typed::<HorizontalPodAutoscaler>(&r).spec,
        Some(strict(&json!({
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "my-cache"},
        "maxReplicas": 5,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}})))
    );
    let metrics = json!([{"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1024Mi"}}}]);
    let behavior = json!({"scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}});
    let custom = render(
        json!({"autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 9, "metrics": metrics, "behavior": behavior}}),
    );
    let hpa = typed::<HorizontalPodAutoscaler>(&custom)
        .spec
        .expect("spec");
    assert_eq!(hpa.min_replicas, Some(2));
    let target = hpa.metrics.expect("metrics")[0]
        .resource
        .as_ref()
        .expect("a resource metric")
        .target
        .clone();
    assert_eq!(
        target.average_value,
        Some(Quantity("1Gi".to_owned())),
        "canonical quantity"
    );
    assert_eq!(hpa.behavior, Some(decoded(behavior)));
    assert!(
        child(
            &render(json!({"autoscaling": {"enabled": false, "maxReplicas": 3}})),
            "HorizontalPodAutoscaler"
        )
        .is_none()
    );
    let available = condition(&r, "Available");
    assert!(available.message.ends_with("(HPA-managed)"));
}

#[test]
fn autoscaling_keeps_the_observed_replicas() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sync/autoscaling-handover.json"
    );
    let request: Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    let observed: Deployment = decoded(request["children"]["Deployment.apps/v1"]["cache"].clone());
    let r = sync_value(&request);
    assert_eq!(
        typed::<Deployment>(&r).spec.expect("spec").replicas,
        observed.spec.expect("spec").replicas,
        "no dip to 1 at the hand-over"
    );
}

#[test]
fn pdb_blocking_under_autoscaling_uses_min_replicas() {
    let r = render(json!({"resources": {"requests": {"cpu": "1"}},
        "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 5},
        "highAvailability": {"podDisruptionBudget": {"enabled": true, "minAvailable": 2}}}));
    let c = condition(&r, "DisruptionBudgetBlocking");
    assert_eq!(c.status, "True");
    assert!(c.message.contains("at 2 replicas"), "{}", c.message);
}
