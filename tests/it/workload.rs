//! `spec.workload`: StatefulSet mode and the switch between Deployment and StatefulSet, replayed
//! step by step from fixtures shaped like Metacontroller's requests, plus a property over random
//! observed states: a switch never answers without a workload whose observed pods are ready, and
//! the selector never changes.

use proptest::prelude::*;
use serde_json::{Value, json};

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet, StatefulSetUpdateStrategy};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::common::{condition, must, status, strict, sync_value, typed};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/sync/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("JSON")
}

fn observed_workloads(request: &Value) -> Vec<&Value> {
    ["Deployment.apps/v1", "StatefulSet.apps/v1"]
        .iter()
        .filter_map(|key| request["children"][key].as_object())
        .flat_map(|m| m.values())
        .collect()
}

/// The workload kinds an answer holds, in order.
pub(crate) fn answered_kinds(response: &Value) -> Vec<String> {
    response["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter_map(|c| c["kind"].as_str())
        .filter(|k| matches!(*k, "Deployment" | "StatefulSet"))
        .map(str::to_owned)
        .collect()
}

fn ready(observed: &Value) -> i64 {
    observed["status"]["readyReplicas"].as_i64().unwrap_or(0)
}

/// The invariant: every observed workload with ready pods is answered, unless the answer's
/// other workload is observed with every replica it is answered at ready.
fn assert_never_without_ready_pods(request: &Value, response: &Value) {
    let kinds = answered_kinds(response);
    for observed in observed_workloads(request) {
        let kind = observed["kind"].as_str().expect("kind");
        if ready(observed) == 0 || kinds.iter().any(|k| k == kind) {
            continue;
        }
        let replacement = observed_workloads(request)
            .into_iter()
            .find(|o| o["kind"] != kind && kinds.iter().any(|k| o["kind"] == k.as_str()))
            .unwrap_or_else(|| panic!("{kind} with ready pods dropped, nothing replaces it"));
        let answered = must(response, replacement["kind"].as_str().expect("kind"));
        let want = answered["spec"]["replicas"]
            .as_i64()
            .or_else(|| replacement["spec"]["replicas"].as_i64())
            .unwrap_or(1);
        assert!(
            want == 0 || ready(replacement) == want,
            "{kind} dropped while its replacement has {}/{want} ready",
            ready(replacement)
        );
    }
}

/// Every workload answered selects exactly the base labels (the selector is immutable).
fn assert_selector_unchanged(response: &Value) {
    let base: LabelSelector = strict(
        &json!({"matchLabels": {"app.kubernetes.io/instance": "cache",
                                "app.kubernetes.io/managed-by": "memcached-operator",
                                "app.kubernetes.io/name": "memcached"}}),
    );
    for kind in answered_kinds(response) {
        let selector = match kind.as_str() {
            "Deployment" => typed::<Deployment>(response).spec.map(|s| s.selector),
            _ => typed::<StatefulSet>(response).spec.map(|s| s.selector),
        };
        assert_eq!(selector.as_ref(), Some(&base), "{kind}");
    }
}

fn step(name: &str) -> (Value, Value) {
    let request = fixture(name);
    let response = sync_value(&request);
    assert_never_without_ready_pods(&request, &response);
    assert_selector_unchanged(&response);
    (request, response)
}

#[test]
fn switch_to_statefulset_and_back_step_by_step() {
    let steps: [(&str, &[&str], &str); 8] = [
        ("steady-state", &["Deployment"], "ProgressingComplete"),
        (
            "switch-to-statefulset-1-started",
            &["Deployment", "StatefulSet"],
            "WorkloadMigration",
        ),
        (
            "switch-to-statefulset-2-new-not-ready",
            &["Deployment", "StatefulSet"],
            "WorkloadMigration",
        ),
        (
            "switch-to-statefulset-3-new-not-observed-yet",
            &["Deployment", "StatefulSet"],
            "WorkloadMigration",
        ),
        (
            "switch-to-statefulset-4-new-ready",
            &["StatefulSet"],
            "ProgressingComplete",
        ),
        (
            "switch-to-deployment-1-started",
            &["Deployment", "StatefulSet"],
            "WorkloadMigration",
        ),
        (
            "switch-to-deployment-2-new-not-ready",
            &["Deployment", "StatefulSet"],
            "WorkloadMigration",
        ),
        (
            "switch-to-deployment-3-new-ready",
            &["Deployment"],
            "ProgressingComplete",
        ),
    ];
    for (name, kinds, reason) in steps {
        let (_, response) = step(name);
        assert_eq!(answered_kinds(&response), kinds, "{name}");
        assert_eq!(condition(&response, "Progressing").reason, reason, "{name}");
    }
}

#[test]
fn the_old_workload_is_answered_exactly_as_last_applied() {
    let (request, response) = step("switch-to-statefulset-2-new-not-ready");
    let observed = &request["children"]["Deployment.apps/v1"]["cache"];
    let last: Value = serde_json::from_str(
        observed["metadata"]["annotations"]["metacontroller.k8s.io/last-applied-configuration"]
            .as_str()
            .expect("annotation"),
    )
    .expect("JSON");
    assert_eq!(must(&response, "Deployment"), &last);
}

#[test]
fn without_last_applied_the_old_workload_is_its_observed_spec() {
    let (request, response) = step("switch-to-statefulset-server-side-apply");
    let observed: Deployment = strict(&request["children"]["Deployment.apps/v1"]["cache"]);
    let kept: Deployment = typed(&response);
    assert_eq!(kept.spec, observed.spec);
    assert_eq!(kept.metadata.labels, observed.metadata.labels);
    assert!(kept.status.is_none());
    assert!(kept.metadata.annotations.is_none());
}

#[test]
fn server_list_names_every_pod_in_statefulset_mode() {
    for name in ["statefulset-steady-state", "statefulset-pod-restarting"] {
        let (_, response) = step(name);
        let pods = (0..3).map(|i| format!("cache-{i}.cache.shop.svc:11211"));
        assert_eq!(
            status(&response).server_list,
            Some(pods.collect()),
            "{name}"
        );
    }
    // The first sync creates the StatefulSet: its pods' names are known and listed at once.
    let (_, first) = step("statefulset-first-sync");
    let pods = (0..3).map(|i| format!("cache-{i}.cache.shop.svc:11211"));
    assert_eq!(status(&first).server_list, Some(pods.collect()));
    let set = typed::<StatefulSet>(&first).spec.expect("spec");
    assert_eq!(set.service_name.as_deref(), Some("cache"));
    assert_eq!(set.pod_management_policy.as_deref(), Some("Parallel"));
    assert_eq!(
        set.update_strategy,
        Some(StatefulSetUpdateStrategy {
            type_: Some("RollingUpdate".to_owned()),
            rolling_update: None,
        })
    );
    assert_eq!(set.volume_claim_templates, None);
}

#[test]
fn statefulset_shares_the_deployment_pod_template() {
    let (_, sts) = step("statefulset-first-sync");
    let (_, dep) = step("first-sync");
    assert_eq!(
        typed::<StatefulSet>(&sts).spec.expect("spec").template,
        typed::<Deployment>(&dep).spec.expect("spec").template
    );
}

#[test]
fn statefulsets_not_declared_keep_the_deployment() {
    let (_, response) = step("statefulset-not-declared");
    assert_eq!(answered_kinds(&response), ["Deployment"]);
    let missing = condition(&response, "ChildResourcesMissing");
    assert_eq!(missing.status, "True");
    assert!(
        missing
            .message
            .contains("statefulsets.apps (needed by spec.workload)")
    );
}

#[test]
fn the_hpa_follows_the_workload_and_the_switch_hands_its_size_over() {
    let (_, response) = step("switch-to-statefulset-autoscaling-started");
    let hpa = typed::<HorizontalPodAutoscaler>(&response)
        .spec
        .expect("spec");
    assert_eq!(hpa.scale_target_ref.kind, "StatefulSet");
    let replicas = |r: &Value| typed::<StatefulSet>(r).spec.expect("spec").replicas;
    assert_eq!(replicas(&response), Some(5));
    let (_, steady) = step("statefulset-autoscaling-steady");
    assert_eq!(replicas(&steady), Some(5));
}

/// A workload observed with `(spec replicas, ready, updated, total)`, generation 2 seen or not.
fn workload(kind: &str, counts: (i64, i64, i64, i64), seen: bool, last_applied: bool) -> Value {
    let (replicas, ready, updated, total) = counts;
    let spec = json!({"replicas": replicas,
        "selector": {"matchLabels": {"app.kubernetes.io/instance": "cache",
                                     "app.kubernetes.io/managed-by": "memcached-operator",
                                     "app.kubernetes.io/name": "memcached"}},
        "template": {"metadata": {"labels": {"app.kubernetes.io/instance": "cache"}},
                     "spec": {"containers": [{"name": "memcached", "image": "memcached:1.6"}]}}});
    let mut annotations = json!({});
    if last_applied {
        let desired = json!({"apiVersion": "apps/v1", "kind": kind,
                             "metadata": {"name": "cache"}, "spec": spec});
        annotations["metacontroller.k8s.io/last-applied-configuration"] =
            desired.to_string().into();
    }
    let revision = if updated == total { "r2" } else { "r1" };
    json!({"apiVersion": "apps/v1", "kind": kind,
           "metadata": {"name": "cache", "namespace": "shop", "generation": 2,
                        "labels": {"app.kubernetes.io/instance": "cache"},
                        "annotations": annotations},
           "spec": spec,
           "status": {"observedGeneration": if seen { 2 } else { 1 }, "replicas": total,
                      "readyReplicas": ready, "updatedReplicas": updated,
                      "currentRevision": revision, "updateRevision": "r2"}})
}

fn counts() -> impl Strategy<Value = (i64, i64, i64, i64)> {
    (0..5i64, 0..5i64, 0..5i64, 0..5i64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_switch_never_answers_without_ready_pods(
        to_statefulset in any::<bool>(),
        replicas in 0..5i64,
        autoscaling in any::<bool>(),
        old in counts(),
        new in proptest::option::of((counts(), any::<bool>())),
        last_applied in any::<bool>(),
    ) {
        let (to, from) = if to_statefulset { ("StatefulSet", "Deployment") } else { ("Deployment", "StatefulSet") };
        let mut children = json!({"Deployment.apps/v1": {}, "StatefulSet.apps/v1": {}, "Service.v1": {},
                                  "HorizontalPodAutoscaler.autoscaling/v2": {}});
        children[format!("{from}.apps/v1")]["cache"] = workload(from, old, true, last_applied);
        if let Some((counts, seen)) = new {
            children[format!("{to}.apps/v1")]["cache"] = workload(to, counts, seen, last_applied);
        }
        let mut spec = json!({"workload": to, "replicas": replicas});
        if autoscaling {
            spec = json!({"workload": to, "autoscaling": {"enabled": true, "maxReplicas": 6},
                          "resources": {"requests": {"cpu": "100m"}}});
        }
        let request = json!({
            "controller": {"spec": {"childResources": [
                {"apiVersion": "apps/v1", "resource": "deployments"},
                {"apiVersion": "apps/v1", "resource": "statefulsets"},
                {"apiVersion": "v1", "resource": "services"},
                {"apiVersion": "autoscaling/v2", "resource": "horizontalpodautoscalers"}]}},
            "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                       "metadata": {"name": "cache", "namespace": "shop", "generation": 2}, "spec": spec},
            "children": children, "related": {}});
        let response = sync_value(&request);
        assert_never_without_ready_pods(&request, &response);
        assert_selector_unchanged(&response);
        // The new workload is always answered; the old one only while the switch is under way.
        prop_assert!(answered_kinds(&response).iter().any(|k| k == to));
    }
}
