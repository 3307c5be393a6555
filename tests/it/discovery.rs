//! The server-list ConfigMap (`spec.discovery.configMap`): each format as written for the usual
//! shapes (snapshots), when it is emitted, that an invalid spec keeps it, and a property: its
//! bytes depend on the spec and the membership only, never on readiness, revisions, pod
//! template changes or the parent's status.

use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::common::{Observed, child, condition, merge, next_request, sync_value, try_typed};

/// Every child kind, as metacontroller/base/ declares them.
fn controller(config_maps: bool) -> Value {
    let mut kinds = vec![
        json!({"apiVersion": "apps/v1", "resource": "deployments"}),
        json!({"apiVersion": "apps/v1", "resource": "statefulsets"}),
        json!({"apiVersion": "v1", "resource": "services"}),
        json!({"apiVersion": "policy/v1", "resource": "poddisruptionbudgets"}),
    ];
    if config_maps {
        kinds.push(json!({"apiVersion": "v1", "resource": "configmaps"}));
    }
    json!({"spec": {"childResources": kinds}})
}

/// The first request for the Memcached `cache` in `namespace` with `spec`.
fn request(namespace: &str, spec: &Value) -> Value {
    let parent = json!({"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
        "metadata": {"name": "cache", "namespace": namespace, "generation": 2,
                     "uid": "0b6c2f4e-1d7a-4c1e-9a55-2f0d3c4b5a69"},
        "spec": spec});
    let related = json!({"Secret.v1": {"cache-tls": {"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cache-tls", "namespace": namespace},
        "data": {"tls.crt": "Q0VSVA==", "tls.key": "S0VZ"}}}});
    json!({"controller": controller(true), "parent": parent, "children": {}, "related": related})
}

fn config_map(response: &Value) -> Option<ConfigMap> {
    try_typed(response)
}

/// The ConfigMap's data as a reader sees it: each key, then its value.
fn shown(response: &Value) -> String {
    let cm = config_map(response).expect("a ConfigMap");
    let mut out = format!("# {}\n", cm.metadata.name.expect("name"));
    for (key, value) in cm.data.expect("data") {
        out.push_str(&format!("--- {key}\n{value}\n"));
    }
    out
}

fn statefulset(replicas: i32) -> Value {
    json!({"workload": "StatefulSet", "replicas": replicas,
           "discovery": {"configMap": {"enabled": true}}})
}

fn with_tls(mut spec: Value, allow_plaintext: bool) -> Value {
    spec["security"] = json!({"tls": {"enabled": true, "allowPlaintext": allow_plaintext,
                                      "certificateSecretRef": {"name": "cache-tls"}}});
    spec
}

fn first_sync(namespace: &str, spec: &Value) -> Value {
    sync_value(&request(namespace, spec))
}

#[test]
fn formats_of_a_statefulset_of_three() {
    insta::assert_snapshot!(shown(&first_sync("shop", &statefulset(3))));
}

#[test]
fn formats_of_a_deployment() {
    let spec = json!({"replicas": 3, "discovery": {"configMap": {"enabled": true}}});
    insta::assert_snapshot!(shown(&first_sync("shop", &spec)));
}

#[test]
fn formats_with_tls() {
    insta::assert_snapshot!(shown(&first_sync("shop", &with_tls(statefulset(2), false))));
}

#[test]
fn formats_with_tls_beside_plaintext_on_port_11212() {
    insta::assert_snapshot!(shown(&first_sync("shop", &with_tls(statefulset(2), true))));
}

#[test]
fn formats_in_another_namespace() {
    insta::assert_snapshot!(shown(&first_sync("payments-eu", &statefulset(2))));
}

#[test]
fn the_config_map_is_written_only_when_enabled_and_declared() {
    let off = json!({"workload": "StatefulSet", "replicas": 3});
    assert!(config_map(&first_sync("shop", &off)).is_none());
    let mut undeclared = request("shop", &statefulset(3));
    undeclared["controller"] = controller(false);
    let response = sync_value(&undeclared);
    assert!(config_map(&response).is_none());
    let missing = condition(&response, "ChildResourcesMissing");
    assert_eq!(missing.status, "True");
    assert!(
        missing
            .message
            .contains("configmaps (needed by spec.discovery.configMap.enabled)"),
        "{missing:?}"
    );
}

/// The request after `first`, the answer to the first sync in `namespace`, now with `spec` and
/// the parent's `status`: the children as the API server holds them, the workloads with the
/// status and server-side fields of `workload` merged in.
fn after(
    first: &Value,
    namespace: &str,
    spec: &Value,
    workload: &Value,
    status: Option<&Value>,
) -> Value {
    let server = |c: &Value| {
        let mut extra = json!({"metadata": {"resourceVersion": "4711",
            "labels": {"controller-uid": "0b6c2f4e-1d7a-4c1e-9a55-2f0d3c4b5a69"}}});
        if c["kind"] == "StatefulSet" || c["kind"] == "Deployment" {
            merge(&mut extra, workload);
        }
        extra
    };
    let mut next = next_request(&request(namespace, spec), first, Observed::With(&server));
    match status {
        Some(status) => next["parent"]["status"] = status.clone(),
        None => drop(
            next["parent"]
                .as_object_mut()
                .expect("parent")
                .remove("status"),
        ),
    }
    next
}

#[test]
fn an_invalid_spec_keeps_the_config_map_as_last_applied() {
    let spec = statefulset(3);
    let first = first_sync("shop", &spec);
    let mut invalid = spec.clone();
    invalid["replicas"] = json!(65);
    let response = sync_value(&after(&first, "shop", &invalid, &json!({}), None));
    assert_eq!(condition(&response, "Degraded").reason, "InvalidSpec");
    let kept = config_map(&response).expect("the ConfigMap is kept");
    let want = config_map(&first).unwrap();
    assert_eq!(kept.data, want.data);
    assert_eq!(kept.metadata.name.as_deref(), Some("cache-servers"));
}

/// An observed workload's state in a rolling restart or with pods not ready: what must not
/// reach the ConfigMap.
fn workload_state() -> impl Strategy<Value = Value> {
    (
        0i32..=64,
        0i32..=64,
        0i32..=64,
        any::<bool>(),
        "[a-z0-9]{0,12}",
        0i64..=5,
    )
        .prop_map(|(ready, updated, current, same_revision, trigger, seen)| {
            let update = if same_revision { "cache-1" } else { "cache-2" };
            json!({
                "metadata": {"generation": seen + 1},
                "spec": {"template": {"metadata": {"annotations": {"example.com/restarted-at": trigger}}}},
                "status": {"observedGeneration": seen, "replicas": current, "readyReplicas": ready,
                           "updatedReplicas": updated, "availableReplicas": ready,
                           "currentRevision": "cache-1", "updateRevision": update}
            })
        })
}

fn parent_status() -> impl Strategy<Value = Option<Value>> {
    prop::option::of((0i32..=64, any::<bool>()).prop_map(|(ready, flag)| {
        json!({"readyReplicas": ready, "observedGeneration": 1,
               "serverList": if flag { json!(["x:1"]) } else { json!(null) },
               "conditions": [{"type": "Ready", "status": if flag { "True" } else { "False" },
                               "reason": "r", "message": "m",
                               "lastTransitionTime": "2026-11-20T00:00:00Z"}]})
    }))
}

#[test]
fn the_config_map_bytes_depend_on_the_spec_and_the_membership_only() {
    let spec_strategy = (0i32..=64, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(replicas, stateful, tls, plaintext)| {
            let mut spec = statefulset(replicas);
            if !stateful {
                spec["workload"] = json!("Deployment");
            }
            if tls { with_tls(spec, plaintext) } else { spec }
        },
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        spec_strategy,
        workload_state(),
        parent_status(),
        "[a-z0-9]{0,8}",
    );
    let result = runner.run(&strategy, |(spec, state, status, trigger)| {
        let first = first_sync("shop", &spec);
        let baseline =
            serde_json::to_vec(child(&first, "ConfigMap").expect("a ConfigMap")).unwrap();
        // The workload as observed mid-rollout, the parent with a restart trigger and any status.
        let mut req = after(&first, "shop", &spec, &state, status.as_ref());
        req["parent"]["metadata"]["annotations"] =
            json!({"memcached.c5c3.io/restart-trigger": trigger});
        let response = sync_value(&req);
        let now = serde_json::to_vec(child(&response, "ConfigMap").expect("a ConfigMap")).unwrap();
        prop_assert_eq!(
            String::from_utf8_lossy(&now),
            String::from_utf8_lossy(&baseline)
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A first request for a StatefulSet cache named `name` in `namespace` over 16 zones of
/// `replicas` pods each, with the server-list ConfigMap.
fn zoned_request(name: &str, namespace: &str, replicas: i32) -> Value {
    let zones: Vec<String> = (0..16)
        .map(|i| format!("zone-{i:02}-{}", "z".repeat(52 - name.len() - 9)))
        .collect();
    let mut spec = statefulset(replicas);
    spec["zones"] = json!({"names": zones});
    let mut req = request(namespace, &spec);
    req["parent"]["metadata"]["name"] = json!(name);
    req
}

/// The annotations the API server would store for an answered ConfigMap, measured on the
/// answer: Metacontroller's last-applied copy of it and the room left for the cluster's own.
fn stored(config_map: &Value) -> usize {
    crate::common::LAST_APPLIED.len()
        + serde_json::to_string(config_map).unwrap().len()
        + memcached_hook::children::accept::CLUSTER_RESERVE
}

/// The first sync of `request`: its answer, or the message of the spec it refuses.
fn first_or_refused(request: &Value) -> Result<Value, String> {
    let body = serde_json::to_vec(request).unwrap();
    let received = memcached_hook::hook::Received::decode(body).expect("decodes");
    match memcached_hook::sync(&received, crate::common::now(), &Default::default()) {
        Ok(answer) => Ok(serde_json::to_value(&answer).unwrap()),
        Err(e @ memcached_hook::SyncError::InvalidSpec { .. }) => Err(e.to_string()),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn the_largest_config_map_that_fits_is_written_and_one_more_pod_per_zone_is_refused() {
    let (name, namespace) = ("c".repeat(20), "n".repeat(63));
    let answers: Vec<Result<Value, String>> = (1..=64)
        .map(|replicas| first_or_refused(&zoned_request(&name, &namespace, replicas)))
        .collect();
    let fits = answers.iter().take_while(|a| a.is_ok()).count();
    assert!(
        (1..64).contains(&fits),
        "a boundary within the CRD's bounds: {fits}"
    );
    let largest = child(answers[fits - 1].as_ref().unwrap(), "ConfigMap").expect("written");
    assert!(stored(largest) <= 256 * 1024, "{}", stored(largest));
    let message = answers[fits].as_ref().expect_err("refused");
    for part in [
        "spec.discovery.configMap.enabled",
        &format!("16 zones x spec.replicas: {}", fits + 1),
        "metadata.name (20 characters)",
        "262144",
    ] {
        assert!(message.contains(part), "{part} in {message}");
    }
    assert!(!message.contains("metadata.annotations"), "{message}");
    // Without the ConfigMap the same spec is valid.
    let mut off = zoned_request(&name, &namespace, fits as i32 + 1);
    off["parent"]["spec"]["discovery"]["configMap"]["enabled"] = json!(false);
    assert!(first_or_refused(&off).is_ok());
}

#[test]
fn a_config_map_too_large_keeps_the_observed_children() {
    let (name, namespace) = ("cache-with-long-name", "shop");
    let first_request = zoned_request(name, namespace, 2);
    let first = sync_value(&first_request);
    assert!(child(&first, "ConfigMap").is_some());
    let mut next = next_request(&first_request, &first, Observed::Settled);
    next["parent"]["spec"]["replicas"] = json!(64);
    let response = sync_value(&next);
    assert_eq!(condition(&response, "Degraded").reason, "InvalidSpec");
    assert_eq!(
        child(&response, "ConfigMap").map(|c| &c["data"]),
        child(&first, "ConfigMap").map(|c| &c["data"]),
        "kept as observed"
    );
}
