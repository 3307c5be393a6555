//! The keep path of server-side apply against hand-made children.

use super::*;
use serde_json::{Value, json};

const UID: &str = "6f1c2b9e-3d4a-4f5b-9c1d-2e3f4a5b6c7d";

fn service() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": "cache", "namespace": "shop", "uid": "x", "resourceVersion": "42",
            "labels": {"app.kubernetes.io/name": "memcached", "controller-uid": UID, "team": "web"},
            "annotations": {"by-hand": "yes"},
            "ownerReferences": [{"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                                 "name": "cache", "uid": UID, "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "metacontroller", "operation": "Apply", "apiVersion": "v1",
                 "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}, "f:controller-uid": {}},
                                   "f:ownerReferences": {format!("k:{{\"uid\":\"{UID}\"}}"): {}}},
                    "f:spec": {"f:clusterIP": {}, "f:ports": {"k:{\"port\":11211,\"protocol\":\"TCP\"}": {
                        ".": {}, "f:name": {}, "f:port": {}, "f:targetPort": {}}},
                               "f:selector": {}}}},
                {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:annotations": {"f:by-hand": {}},
                                                                       "f:labels": {"f:team": {}}}}}
            ]
        },
        "spec": {"clusterIP": "None", "clusterIPs": ["None"], "type": "ClusterIP",
                 "sessionAffinity": "None",
                 "ports": [{"name": "memcached", "port": 11211, "protocol": "TCP", "targetPort": "memcached"},
                           {"name": "other", "port": 9999, "protocol": "TCP", "targetPort": 9999}],
                 "selector": {"app.kubernetes.io/name": "memcached"}},
        "status": {"loadBalancer": {}}
    })
}

fn body(children: &[Value]) -> Vec<u8> {
    let mut map = serde_json::Map::new();
    for c in children {
        map.insert(
            c["metadata"]["name"].as_str().unwrap().to_owned(),
            c.clone(),
        );
    }
    serde_json::to_vec(&json!({
        "parent": {"metadata": {"name": "cache", "uid": UID}},
        "children": {"Service.v1": map}
    }))
    .unwrap()
}

fn kept(children: &[Value]) -> Option<Vec<Value>> {
    kept_children(&body(children))
        .map(|v| v.iter().map(|c| serde_json::to_value(c).unwrap()).collect())
}

#[test]
fn exactly_the_fields_metacontroller_applied_with_live_values() {
    let got = kept(&[service()]).expect("kept");
    assert_eq!(
        got,
        vec![json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "cache", "namespace": "shop",
                         "labels": {"app.kubernetes.io/name": "memcached", "controller-uid": UID},
                         "ownerReferences": [{"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                                              "name": "cache", "uid": UID, "controller": true,
                                              "blockOwnerDeletion": true}]},
            "spec": {"clusterIP": "None",
                     "ports": [{"name": "memcached", "port": 11211, "targetPort": "memcached"}],
                     "selector": {"app.kubernetes.io/name": "memcached"}}
        })]
    );
}

#[test]
fn no_apply_entry_owning_the_controller_reference_keeps_nothing() {
    let mut s = service();
    s["metadata"]["managedFields"][0]["operation"] = json!("Update");
    assert!(kept(&[s]).is_none());
    let mut s = service();
    s["metadata"]["ownerReferences"][0]["uid"] = json!("other");
    s["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:ownerReferences"] =
        json!({"k:{\"uid\":\"other\"}": {}});
    assert!(kept(&[s]).is_none());
    let mut s = service();
    s["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    assert!(kept(&[s]).is_none());
}

#[test]
fn two_apply_entries_owning_it_are_ambiguous() {
    let mut s = service();
    let mut second = s["metadata"]["managedFields"][0].clone();
    second["manager"] = json!("someone-else");
    s["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .push(second);
    assert!(kept(&[s]).is_none());
}

#[test]
fn one_child_without_a_record_keeps_nothing() {
    let mut other = service();
    other["metadata"]["name"] = json!("cache-2");
    other["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    assert!(kept(&[service(), other]).is_none());
}

#[test]
fn no_children_or_no_parent_uid_keeps_nothing() {
    assert!(kept(&[]).is_none());
    let b = serde_json::to_vec(&json!({"parent": {"metadata": {"name": "cache"}},
                                       "children": {"Service.v1": {"cache": service()}}}))
    .unwrap();
    assert!(kept_children(&b).is_none());
    assert!(kept_children(b"not json").is_none());
}

#[test]
fn set_value_and_index_keys_select_list_items() {
    let mut s = service();
    s["spec"]["clusterIPs"] = json!(["None", "10.0.0.1", "10.0.0.2"]);
    s["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:clusterIPs"] =
        json!({"v:\"None\"": {}, "i:2": {}, "v:\"elsewhere\"": {}, "x:1": {}});
    let got = kept(&[s]).expect("kept");
    assert_eq!(got[0]["spec"]["clusterIPs"], json!(["None", "10.0.0.2"]));
}

/// A Service with `ports` ports, all applied by the controller: what an attacker who may edit
/// a child makes the keep path read.
fn service_with_ports(ports: usize) -> Value {
    let mut s = service();
    let mut set = serde_json::Map::new();
    let mut list = Vec::new();
    for port in 0..ports {
        list.push(json!({"name": format!("p{port}"), "port": port, "protocol": "TCP"}));
        set.insert(
            format!("k:{{\"port\":{port},\"protocol\":\"TCP\"}}"),
            json!({".": {}, "f:name": {}, "f:port": {}}),
        );
    }
    s["spec"]["ports"] = Value::Array(list);
    s["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:ports"] = Value::Object(set);
    s
}

#[test]
fn every_keyed_item_of_a_long_list_is_found() {
    let got = kept(&[service_with_ports(3000)]).expect("kept");
    let ports = got[0]["spec"]["ports"].as_array().expect("ports");
    assert_eq!(ports.len(), 3000);
    assert_eq!(ports[2999], json!({"name": "p2999", "port": 2999}));
}

#[test]
fn a_field_set_nested_beyond_the_bound_keeps_nothing() {
    let mut s = service();
    let (mut value, mut set) = (json!("leaf"), json!({}));
    for _ in 0..=fields::MAX_DEPTH {
        value = json!({ "a": value });
        set = json!({ "f:a": set });
    }
    s["spec"]["deep"] = value;
    s["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:deep"] = set;
    assert!(kept(&[s]).is_none());
}

#[test]
fn list_keys_of_too_many_shapes_keep_nothing() {
    let mut s = service();
    let mut set = serde_json::Map::new();
    for shape in 0..=fields::MAX_KEY_SHAPES {
        set.insert(format!("k:{{\"f{shape}\":1}}"), json!({}));
    }
    s["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:ports"] = Value::Object(set);
    assert!(kept(&[s]).is_none());
    // One shape fewer is read (and matches no port).
    let mut s = service();
    let mut set = serde_json::Map::new();
    for shape in 0..fields::MAX_KEY_SHAPES {
        set.insert(format!("k:{{\"f{shape}\":1}}"), json!({}));
    }
    s["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:ports"] = Value::Object(set);
    assert_eq!(kept(&[s]).expect("kept")[0]["spec"]["ports"], json!([]));
}

/// A Deployment whose template Metacontroller applied, with the API server's defaults beside it
/// and the memcached image taken over by `kubectl edit`.
fn deployment() -> Value {
    json!({
        "metadata": {"managedFields": [
            {"manager": "metacontroller", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {
                "f:metadata": {"f:ownerReferences": {format!("k:{{\"uid\":\"{UID}\"}}"): {}}},
                "f:spec": {"f:replicas": {}, "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {
                        "k:{\"name\":\"memcached\"}": {".": {}, "f:name": {}, "f:args": {}},
                        "k:{\"name\":\"agent\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}},
            {"manager": "kubectl-edit", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {
                "f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"memcached\"}": {"f:image": {}}}}}}}}
        ]},
        "spec": {"replicas": 2, "template": {
            "metadata": {"labels": {"app": "cache"}},
            "spec": {"dnsPolicy": "ClusterFirst", "containers": [
                {"name": "memcached", "image": "memcached:edited", "args": ["-m", "64"],
                 "imagePullPolicy": "IfNotPresent"},
                {"name": "agent", "image": "hook:1", "terminationMessagePath": "/dev/termination-log"}]}}}
    })
}

fn template_of(d: &Value) -> Option<Value> {
    let raw = |v: &Value| RawValue::from_string(v.to_string()).unwrap();
    let (fields, spec) = (raw(&d["metadata"]["managedFields"]), raw(&d["spec"]));
    applied_template(&fields, &spec, UID).map(|t| serde_json::from_str(&t).unwrap())
}

#[test]
fn the_applied_template_leaves_out_defaults_and_fields_another_manager_took() {
    assert_eq!(
        template_of(&deployment()),
        Some(json!({"metadata": {"labels": {"app": "cache"}},
                    "spec": {"containers": [{"name": "memcached", "args": ["-m", "64"]},
                                            {"name": "agent", "image": "hook:1"}]}}))
    );
}

#[test]
fn no_single_apply_entry_owning_the_controller_reference_gives_no_template() {
    let mut d = deployment();
    let second = d["metadata"]["managedFields"][0].clone();
    d["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .push(second);
    assert_eq!(template_of(&d), None);
    let mut d = deployment();
    d["metadata"]["managedFields"][0]["operation"] = json!("Update");
    assert_eq!(template_of(&d), None);
    let mut d = deployment();
    d["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
        .as_object_mut()
        .unwrap()
        .remove("f:template");
    assert_eq!(template_of(&d), None);
}
