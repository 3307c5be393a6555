//! What every child shares: the recommended labels, the selector, what Metacontroller owns, and
//! the child kinds the CompositeController declares.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::json;

use crate::common::{
    base_labels, base_selector, child, condition, render, request_json, sync_value, typed,
};

#[test]
fn every_child_carries_the_three_recommended_labels() {
    let r = render(json!({"highAvailability": {"podDisruptionBudget": {"enabled": true}}}));
    let base = Some(base_labels("my-cache"));
    assert_eq!(typed::<Service>(&r).metadata.labels, base);
    assert_eq!(typed::<PodDisruptionBudget>(&r).metadata.labels, base);
    let dep: Deployment = typed(&r);
    let mut with_version = base_labels("my-cache");
    with_version.insert("app.kubernetes.io/version".to_owned(), "1.6.45".to_owned());
    assert_eq!(dep.metadata.labels.as_ref(), Some(&with_version));
    let template = dep.spec.expect("spec").template.metadata.expect("metadata");
    assert_eq!(template.labels, Some(with_version));
}

#[test]
fn selectors_are_the_base_labels_and_never_change_with_the_spec() {
    let plain = render(json!({}));
    let changed = render(
        json!({"image": "registry.io/memcached:1.6.40", "replicas": 7,
                               "highAvailability": {"antiAffinityPreset": "hard",
                                                    "podDisruptionBudget": {"enabled": true}}}),
    );
    for r in [&plain, &changed] {
        let deployment = typed::<Deployment>(r).spec.expect("spec");
        assert_eq!(deployment.selector, base_selector("my-cache"));
        let service = typed::<Service>(r).spec.expect("spec");
        assert_eq!(service.selector, Some(base_labels("my-cache")));
    }
    let pdb = typed::<PodDisruptionBudget>(&changed).spec.expect("spec");
    assert_eq!(pdb.selector, Some(base_selector("my-cache")));
}

#[test]
fn version_label_only_for_a_usable_tag() {
    for (image, want) in [
        ("memcached:1.6.29", Some("1.6.29")),
        ("memcached", None),
        ("memcached@sha256:0123", None),
        ("host:5000/img", None),
        ("memcached:1.6-alpine", Some("1.6-alpine")),
    ] {
        let r = render(json!({"image": image}));
        let labels = typed::<Deployment>(&r).metadata.labels.expect("labels");
        let version = labels.get("app.kubernetes.io/version").map(String::as_str);
        assert_eq!(version, want, "{image}");
        let service = typed::<Service>(&r).metadata.labels.expect("labels");
        assert_eq!(service.get("app.kubernetes.io/version"), None);
    }
}

#[test]
fn hook_never_writes_what_metacontroller_owns() {
    let r = render(json!({"highAvailability": {"podDisruptionBudget": {"enabled": true}}}));
    for c in r["children"].as_array().expect("children") {
        let meta = &c["metadata"];
        for field in ["namespace", "ownerReferences", "resourceVersion", "uid"] {
            assert!(meta.get(field).is_none(), "{field} in {c}");
        }
        assert!(meta["labels"].get("controller-uid").is_none());
        assert!(c.get("status").is_none());
    }
    assert!(r.get("finalized").is_none());
    assert_eq!(
        r.as_object().expect("object").len(),
        2,
        "only children and status: {r}"
    );
}

#[test]
fn undeclared_kinds_are_not_emitted_and_named_in_status() {
    let mut request =
        request_json(json!({"highAvailability": {"podDisruptionBudget": {"enabled": true}}}));
    request["controller"]["spec"]["childResources"] = json!([
        {"apiVersion": "apps/v1", "resource": "deployments"}, {"apiVersion": "v1", "resource": "services"}]);
    let r = sync_value(&request);
    assert!(child(&r, "PodDisruptionBudget").is_none());
    let c = condition(&r, "ChildResourcesMissing");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "NotDeclared")
    );
    let message = c.message;
    assert!(
        message.contains("poddisruptionbudgets.policy")
            && message.contains("spec.highAvailability.podDisruptionBudget.enabled"),
        "{message}"
    );
    let ok = render(json!({}));
    let c = condition(&ok, "ChildResourcesMissing");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "AllDeclared")
    );
}
