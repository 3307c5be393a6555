//! `spec.childMetadata`: labels and annotations on every child object, the hook's own keys
//! refused, the objects' own entries winning, the pods left to `podLabels`.

use serde_json::{Value, json};

use crate::common::{request_json, sync_value};

/// The first sync of `spec` under a CompositeController that declares every kind.
fn render(spec: Value) -> Value {
    sync_value(&request(spec))
}

fn request(spec: Value) -> Value {
    let mut req = request_json(spec);
    let kinds = req["controller"]["spec"]["childResources"]
        .as_array_mut()
        .expect("kinds");
    for (api_version, resource) in [("apps/v1", "statefulsets"), ("v1", "configmaps")] {
        let kind = json!({"apiVersion": api_version, "resource": resource});
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    req
}

fn everything() -> Value {
    json!({
        "replicas": 3,
        "workload": "StatefulSet",
        "highAvailability": {"podDisruptionBudget": {"enabled": true, "maxUnavailable": 1}},
        "monitoring": {"enabled": true, "serviceMonitor": {"enabled": true}},
        "security": {"networkPolicy": {"enabled": true}},
        "discovery": {"configMap": {"enabled": true}},
        "service": {"labels": {"team": "from-service"}, "annotations": {"note": "from-service"}},
        "childMetadata": {
            "labels": {"cost-center": "cc-42", "team": "from-child-metadata"},
            "annotations": {"owner": "payments", "note": "from-child-metadata"}
        }
    })
}

#[test]
fn every_child_carries_the_labels_and_annotations_and_its_own_entries_win() {
    let answer = render(everything());
    let children = answer["children"].as_array().expect("children");
    assert!(children.len() >= 6, "{children:?}");
    for child in children {
        let what = format!("{}/{}", child["kind"], child["metadata"]["name"]);
        let meta = &child["metadata"];
        assert_eq!(meta["labels"]["cost-center"], "cc-42", "{what}");
        assert_eq!(meta["annotations"]["owner"], "payments", "{what}");
        // The hook's own labels are kept.
        assert_eq!(
            meta["labels"]["app.kubernetes.io/name"], "memcached",
            "{what}"
        );
        let service = child["kind"] == "Service";
        let (team, note) = if service {
            ("from-service", "from-service")
        } else {
            ("from-child-metadata", "from-child-metadata")
        };
        assert_eq!(meta["labels"]["team"], team, "{what}");
        assert_eq!(meta["annotations"]["note"], note, "{what}");
        // Never on the pods, and never in a selector.
        let template = &child["spec"]["template"]["metadata"];
        assert!(template["labels"].get("cost-center").is_none(), "{what}");
        assert!(template["annotations"].get("owner").is_none(), "{what}");
        let selector = &child["spec"]["selector"];
        assert!(!selector.to_string().contains("cc-42"), "{what}");
    }
    let kinds: Vec<&str> = children.iter().filter_map(|c| c["kind"].as_str()).collect();
    for kind in [
        "StatefulSet",
        "Service",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "ConfigMap",
    ] {
        assert!(kinds.contains(&kind), "{kind} among {kinds:?}");
    }
}

#[test]
fn without_child_metadata_the_children_are_as_before() {
    let mut spec = everything();
    let with = render(spec.clone());
    spec.as_object_mut().expect("spec").remove("childMetadata");
    let without = render(spec);
    for (a, b) in with["children"]
        .as_array()
        .expect("children")
        .iter()
        .zip(without["children"].as_array().expect("children"))
    {
        let mut a = a.clone();
        let service = a["kind"] == "Service";
        let labels = a["metadata"]["labels"].as_object_mut().expect("labels");
        labels.remove("cost-center");
        if !service {
            labels.remove("team");
        }
        let annotations = a["metadata"]["annotations"]
            .as_object_mut()
            .expect("annotations");
        annotations.remove("owner");
        if !service {
            annotations.remove("note");
        }
        if annotations.is_empty() {
            a["metadata"]
                .as_object_mut()
                .expect("metadata")
                .remove("annotations");
        }
        assert_eq!(&a, b);
    }
}

#[test]
fn a_change_of_child_metadata_keeps_every_pod_template() {
    let first = render(everything());
    let mut spec = everything();
    spec["childMetadata"]["labels"]["cost-center"] = json!("cc-43");
    let mut req = request(spec);
    req["parent"]["metadata"]["generation"] = json!(2);
    let second = sync_value(&req);
    let template = |answer: &Value| {
        answer["children"]
            .as_array()
            .expect("children")
            .iter()
            .find(|c| c["kind"] == "StatefulSet")
            .map(|c| c["spec"]["template"].clone())
            .expect("a StatefulSet")
    };
    assert_eq!(template(&first), template(&second));
}

/// The fields at fault in `spec`.
fn violations(spec: Value) -> Vec<String> {
    let spec = serde_json::from_value(spec).expect("spec");
    memcached_hook::api::validation::validate("my-cache", &spec)
        .into_iter()
        .map(|v| v.to_string())
        .collect()
}

#[test]
fn the_keys_of_the_hook_and_of_metacontroller_are_refused() {
    let cases = [
        (
            json!({"childMetadata": {"labels": {"app.kubernetes.io/name": "x"}}}),
            "spec.childMetadata.labels",
        ),
        (
            json!({"childMetadata": {"labels": {"controller-uid": "x"}}}),
            "spec.childMetadata.labels",
        ),
        (
            json!({"childMetadata": {"labels": {"team": "not a label value"}}}),
            "spec.childMetadata.labels",
        ),
        (
            json!({"childMetadata": {"annotations": {"memcached.c5c3.io/template-hash": "x"}}}),
            "spec.childMetadata.annotations",
        ),
        (
            json!({"childMetadata": {"annotations": {
                "metacontroller.k8s.io/last-applied-configuration": "{}"}}}),
            "spec.childMetadata.annotations",
        ),
    ];
    for (spec, field) in cases {
        let got = violations(spec.clone());
        assert!(
            got.len() == 1 && got[0].starts_with(field),
            "{spec}: {got:?}"
        );
    }
    assert!(violations(json!({"childMetadata": {"labels": {"team": "a"}}})).is_empty());
}

#[test]
fn annotations_together_with_the_services_must_fit_its_last_applied_copy() {
    let part = "x".repeat(36 * 1024);
    let spec = json!({
        "service": {"annotations": {"a": part, "b": part}},
        "childMetadata": {"annotations": {"c": part, "d": part}}
    });
    let got = violations(spec);
    assert!(
        got.len() == 1 && got[0].starts_with("spec.childMetadata.annotations: Too long"),
        "{got:?}"
    );
}
