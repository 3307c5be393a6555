//! The request of a zones-off switch whose many leaving zone Deployments carry no last-applied
//! annotation, shared by the integration tests and the keep-path benchmark.

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
