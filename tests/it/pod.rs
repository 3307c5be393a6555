//! The pod fields of the spec: placement, pull secrets, pod labels and annotations.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use serde_json::json;

use crate::common::{
    assert_absent, base_labels, base_selector, decoded, map, pod_spec, render, request_json,
    sync_value, typed,
};

#[test]
fn placement_and_pull_secrets_are_copied_to_the_pod_template() {
    let toleration = json!({"key": "dedicated", "operator": "Equal", "value": "cache",
                            "effect": "NoSchedule"});
    let node = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["cache"]}]}]}});
    let r = render(json!({
        "nodeSelector": {"node.example.com/pool": "cache"}, "tolerations": [toleration],
        "affinity": {"nodeAffinity": node}, "priorityClassName": "cache-critical",
        "imagePullSecrets": [{"name": "registry"}]}));
    let pod = pod_spec(&r);
    assert_eq!(
        pod.node_selector,
        Some(map(&[("node.example.com/pool", "cache")]))
    );
    assert_eq!(pod.tolerations, Some(vec![decoded(toleration)]));
    assert_eq!(pod.affinity, decoded(json!({"nodeAffinity": node})));
    assert_eq!(pod.priority_class_name.as_deref(), Some("cache-critical"));
    assert_eq!(
        pod.image_pull_secrets,
        decoded(json!([{"name": "registry"}]))
    );
    // Empty lists and maps are left out (the API server would drop them).
    let r = render(
        json!({"nodeSelector": {}, "tolerations": [], "imagePullSecrets": [],
                          "affinity": {"podAffinity": {
                              "preferredDuringSchedulingIgnoredDuringExecution": []}}}),
    );
    let pod = pod_spec(&r);
    assert_absent(&[
        ("nodeSelector", pod.node_selector.is_none()),
        ("tolerations", pod.tolerations.is_none()),
        ("imagePullSecrets", pod.image_pull_secrets.is_none()),
        ("priorityClassName", pod.priority_class_name.is_none()),
        ("affinity", pod.affinity.is_none()),
    ]);
}

#[test]
fn pod_labels_and_annotations_join_the_hooks_own() {
    let mut request = request_json(json!({
        "image": "memcached:1.6.38",
        "podLabels": {"team": "checkout", "app.kubernetes.io/part-of": "shop"},
        "podAnnotations": {"sidecar.istio.io/inject": "true"},
        "service": {"labels": {"team": "checkout"}}}));
    request["parent"]["metadata"]["annotations"] =
        json!({"memcached.c5c3.io/restart-trigger": "1"});
    let r = sync_value(&request);
    let dep: Deployment = typed(&r);
    let mut pod_labels = base_labels("my-cache");
    pod_labels.insert("app.kubernetes.io/version".to_owned(), "1.6.38".to_owned());
    let own = pod_labels.clone();
    pod_labels.extend(map(&[
        ("team", "checkout"),
        ("app.kubernetes.io/part-of", "shop"),
    ]));
    assert_eq!(
        dep.metadata.labels,
        Some(own),
        "the Deployment's own labels stay the hook's"
    );
    let spec = dep.spec.expect("spec");
    assert_eq!(spec.selector, base_selector("my-cache"));
    let template = spec.template.metadata.expect("metadata");
    assert_eq!(template.labels, Some(pod_labels));
    assert_eq!(
        template.annotations,
        Some(map(&[
            ("sidecar.istio.io/inject", "true"),
            ("memcached.c5c3.io/restart-trigger", "1"),
        ]))
    );
    let service: Service = typed(&r);
    let mut service_labels = base_labels("my-cache");
    service_labels.insert("team".to_owned(), "checkout".to_owned());
    assert_eq!(service.metadata.labels, Some(service_labels));
    let selector = service.spec.expect("spec").selector;
    assert_eq!(selector, Some(base_labels("my-cache")));
}
