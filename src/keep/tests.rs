//! The order of the sources, through the one entry point.

use serde_json::{Value, json};

use super::*;

const UID: &str = "6f1c2b9e-3d4a-4f5b-9c1d-2e3f4a5b6c7d";

/// A Deployment `cache` applied by Metacontroller: its managed fields name `spec.replicas`;
/// with `annotated`, its last-applied annotation holds `spec.replicas: 2` as well.
fn deployment(annotated: bool) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cache", "namespace": "shop", "labels": {"team": "web"},
            "ownerReferences": [{"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                                 "name": "cache", "uid": UID, "controller": true}],
            "managedFields": [{"manager": "metacontroller", "operation": "Apply",
                "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:ownerReferences": {format!("k:{{\"uid\":\"{UID}\"}}"): {}}},
                    "f:spec": {"f:replicas": {}}}}]},
        "spec": {"replicas": 3, "paused": false}
    });
    if annotated {
        let last = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": "cache"}, "spec": {"replicas": 2}});
        d["metadata"]["annotations"] =
            json!({"metacontroller.k8s.io/last-applied-configuration": last.to_string()});
    }
    d
}

fn body(child: &Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "controller": {"spec": {"childResources": []}},
        "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                   "metadata": {"name": "cache", "namespace": "shop", "uid": UID}},
        "children": {"Deployment.apps/v1": {"cache": child}}
    }))
    .expect("json")
}

fn kept(received: &Received<'_>, asked: Asked<'_>) -> Option<Vec<Value>> {
    observed(received, asked).map(|children| {
        children
            .iter()
            .map(|c| serde_json::to_value(c).expect("json"))
            .collect()
    })
}

#[test]
fn last_applied_comes_first_for_every_ask() {
    let received = Received::decode(body(&deployment(true))).expect("decodes");
    let every = kept(&received, Asked::EveryChild).expect("kept");
    assert_eq!(every[0]["spec"], json!({"replicas": 2}));
    let old = received.request().children.iter().next().expect("child");
    let workload = kept(&received, Asked::LeavingWorkload(old)).expect("kept");
    assert_eq!(workload, every);
}

#[test]
fn without_it_every_child_is_its_managed_fields_and_the_old_workload_its_labels_and_spec() {
    let received = Received::decode(body(&deployment(false))).expect("decodes");
    let every = kept(&received, Asked::EveryChild).expect("kept");
    assert_eq!(every[0]["spec"], json!({"replicas": 3}));
    assert!(every[0]["metadata"].get("labels").is_none());
    let old = received.request().children.iter().next().expect("child");
    let workload = kept(&received, Asked::LeavingWorkload(old)).expect("kept");
    assert_eq!(workload[0]["spec"], json!({"replicas": 3, "paused": false}));
    assert_eq!(workload[0]["metadata"]["labels"], json!({"team": "web"}));
}

#[test]
fn a_request_without_a_body_keeps_only_by_last_applied() {
    let with = Received::decode(body(&deployment(true))).expect("decodes");
    let built = Received::built(crate::hook::decode(&body(&deployment(true))).expect("decodes"));
    assert_eq!(
        kept(&built, Asked::EveryChild),
        kept(&with, Asked::EveryChild)
    );
    let built = Received::built(crate::hook::decode(&body(&deployment(false))).expect("decodes"));
    assert!(kept(&built, Asked::EveryChild).is_none());
    let old = built.request().children.iter().next().expect("child");
    assert!(kept(&built, Asked::LeavingWorkload(old)).is_none());
}
