//! Requests with many observed workloads, shared by the integration tests and the keep-path
//! benchmark: a zones-off switch whose leaving zone Deployments carry no last-applied annotation,
//! and a zoned request mid-rollout with many zone Deployments observed.

use serde_json::{Value, json};

/// The zones-off switch of the fixture `zones-turned-off-mid-switch` with `leaving` zone
/// Deployments, none carrying a last-applied annotation, so each is kept from its labels and
/// spec in the body.
pub fn leaving_without_last_applied(leaving: usize) -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sync/zones-turned-off-mid-switch.json"
    );
    let mut request: Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    let deployments = request["children"]["Deployment.apps/v1"]
        .as_object_mut()
        .expect("deployments");
    let mut zone = deployments["cache-zone-a"].clone();
    zone["metadata"]["annotations"]
        .as_object_mut()
        .expect("annotations")
        .remove("metacontroller.k8s.io/last-applied-configuration");
    deployments.retain(|name, _| name == "cache");
    for i in 0..leaving {
        let name = format!("cache-zone-{i}");
        let mut workload = zone.clone();
        workload["metadata"]["name"] = json!(name);
        deployments.insert(name, workload);
    }
    request["children"]["PodDisruptionBudget.policy/v1"] = json!({});
    serde_json::to_vec(&request).expect("json")
}

/// The zones of [`zoned_with_observed`]'s spec.
pub const ZONES: usize = 16;

/// A zoned request mid-rollout (the fixture `zones-rollout-started`, its spec over [`ZONES`]
/// zones) whose `observed` workloads (at least [`ZONES`]) are the spec's zone Deployments and, past
/// those, Deployments of zones no longer in the spec; each as Metacontroller observes it, with its
/// last-applied annotation, zone label and node affinity.
pub fn zoned_with_observed(observed: usize) -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sync/zones-rollout-started.json"
    );
    let mut request: Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    let zones: Vec<String> = (0..ZONES).map(|i| format!("zone-{i:02}")).collect();
    request["parent"]["spec"]["zones"]["names"] = json!(zones);
    let deployments = request["children"]["Deployment.apps/v1"]
        .as_object_mut()
        .expect("deployments");
    // The zone's name is in its workload's name, labels, affinity and last-applied copy.
    let zone_a = serde_json::to_string(&deployments["cache-zone-a"]).expect("json");
    deployments.clear();
    for i in 0..observed.max(ZONES) {
        let zone = zones.get(i).cloned().unwrap_or_else(|| format!("gone-{i}"));
        let workload: Value = serde_json::from_str(&zone_a.replace("zone-a", &zone)).expect("json");
        deployments.insert(format!("cache-{zone}"), workload);
    }
    request["children"]["PodDisruptionBudget.policy/v1"] = json!({});
    serde_json::to_vec(&request).expect("json")
}
