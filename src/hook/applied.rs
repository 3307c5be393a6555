//! What the controller last applied to an observed child, recovered from the child itself.
//!
//! Under Metacontroller's dynamic apply every child carries this hook's last answer in the
//! `metacontroller.k8s.io/last-applied-configuration` annotation. Under server-side apply it does
//! not; there the API server records, in `metadata.managedFields`, the set of fields each field
//! manager applied. The entry of operation `Apply` that owns the child's controller
//! ownerReference to the parent (Metacontroller adds it to every child it applies) is
//! Metacontroller's, whatever its `--apply-strategy-ssa-field-manager` is called. Its field set,
//! filled with the child's live values, is exactly what Metacontroller applied last (fields another
//! manager took over since are not in it), so applying it again changes nothing.
//!
//! Only read for an invalid spec whose observed children have no last-applied annotation: the
//! request body is decoded a second time, fully, which the sync path otherwise never does.
//! [`observed_workload`] reads the body a second time for the other rare path: the old workload
//! of a switch, repeated as observed (labels and spec) when it has no last-applied annotation.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{Child, Observed};

/// The parts of a sync request this module reads: the parent's UID and the whole children.
#[derive(Deserialize)]
struct Request {
    parent: ParentRef,
    #[serde(default)]
    children: Observed<Map<String, Value>>,
}

#[derive(Deserialize)]
struct ParentRef {
    metadata: ParentMeta,
}

#[derive(Deserialize)]
struct ParentMeta {
    #[serde(default)]
    uid: Option<String>,
}

/// Every observed child as the controller last applied it with server-side apply (its field set
/// with live values), or `None` when one of them has no such record, when there are no children,
/// or when `body` is not a sync request.
#[must_use]
pub fn kept_children(body: &[u8]) -> Option<Vec<Child>> {
    let req: Request = serde_json::from_slice(body).ok()?;
    let uid = req.parent.metadata.uid?;
    if req.children.is_empty() {
        return None;
    }
    req.children
        .iter()
        .map(|child| {
            let value = applied(child, &uid)?;
            let text = serde_json::to_string(&value).ok()?;
            RawValue::from_string(text).ok().map(Child::Kept)
        })
        .collect()
}

/// An observed workload as sent: its labels and its whole spec.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Workload {
    api_version: String,
    kind: String,
    metadata: WorkloadMeta,
    #[serde(default)]
    spec: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct WorkloadMeta {
    name: String,
    #[serde(default)]
    labels: Option<Box<RawValue>>,
}

/// The labels (if any) and the spec of the observed child `kind` in `api_version` named `name`,
/// exactly as `body` sends them: what the old workload of a switch under server-side apply is
/// answered with. `None` when there is no such child or it has no spec.
#[must_use]
pub fn observed_workload(
    body: &[u8],
    (api_version, kind, name): (&str, &str, &str),
) -> Option<(Option<Box<RawValue>>, Box<RawValue>)> {
    #[derive(Deserialize)]
    struct Children {
        #[serde(default)]
        children: Observed<Workload>,
    }
    let req: Children = serde_json::from_slice(body).ok()?;
    let child = req
        .children
        .0
        .into_iter()
        .find(|c| c.api_version == api_version && c.kind == kind && c.metadata.name == name)?;
    Some((child.metadata.labels, child.spec?))
}

/// The object the controller applied last to `child`, from its managed fields.
fn applied(child: &Map<String, Value>, parent_uid: &str) -> Option<Value> {
    let meta = child.get("metadata")?.as_object()?;
    let entries = meta.get("managedFields")?.as_array()?;
    let mut owners = entries.iter().filter(|e| {
        e.get("operation").and_then(Value::as_str) == Some("Apply")
            && e.get("fieldsType").and_then(Value::as_str) == Some("FieldsV1")
            && e.get("fieldsV1")
                .is_some_and(|f| owns_controller_ref(f, parent_uid))
    });
    let entry = owners.next()?;
    if owners.next().is_some() {
        return None; // two managers claim the controller reference: not ours to guess
    }
    let fields = entry.get("fieldsV1")?.as_object()?;
    let mut out = project_object(child, fields);
    // The identity is never in a field set; Metacontroller needs it.
    for key in ["apiVersion", "kind"] {
        out.insert(key.to_owned(), child.get(key)?.clone());
    }
    let out_meta = out
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()?;
    for key in ["name", "namespace"] {
        if let Some(v) = meta.get(key) {
            out_meta.insert(key.to_owned(), v.clone());
        }
    }
    Some(Value::Object(out))
}

/// Whether a field set owns `metadata.ownerReferences[uid=parent_uid]`.
fn owns_controller_ref(fields: &Value, parent_uid: &str) -> bool {
    fields
        .get("f:metadata")
        .and_then(|m| m.get("f:ownerReferences"))
        .and_then(Value::as_object)
        .is_some_and(|refs| {
            refs.keys().any(|k| {
                k.strip_prefix("k:")
                    .and_then(|key| serde_json::from_str::<Map<String, Value>>(key).ok())
                    .is_some_and(|key| key.get("uid").and_then(Value::as_str) == Some(parent_uid))
            })
        })
}

/// The fields of `object` named by `fields` (`f:<name>` entries).
fn project_object(object: &Map<String, Value>, fields: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, sub) in fields {
        let Some(name) = key.strip_prefix("f:") else {
            continue;
        };
        if let Some(value) = object.get(name) {
            out.insert(name.to_owned(), project(value, sub));
        }
    }
    out
}

/// `value` reduced to the field set `fields`. An empty set (or one holding only `.`) owns the
/// value as a whole.
fn project(value: &Value, fields: &Value) -> Value {
    let Some(set) = fields.as_object().filter(|s| s.keys().any(|k| k != ".")) else {
        return value.clone();
    };
    match value {
        Value::Object(object) => Value::Object(project_object(object, set)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    let sub = set.iter().find(|(k, _)| item_matches(k, i, item))?.1;
                    Some(project(item, sub))
                })
                .collect(),
        ),
        // A scalar where the set expects structure: the whole value was applied.
        _ => value.clone(),
    }
}

/// Whether a list item at `index` is the one a field-set key names: `k:{...}` (the item's
/// merge-key fields equal), `v:<json>` (the item equals), `i:<n>` (the position).
fn item_matches(key: &str, index: usize, item: &Value) -> bool {
    if let Some(k) = key.strip_prefix("k:") {
        let Ok(wanted) = serde_json::from_str::<Map<String, Value>>(k) else {
            return false;
        };
        wanted.iter().all(|(f, v)| item.get(f) == Some(v))
    } else if let Some(v) = key.strip_prefix("v:") {
        serde_json::from_str::<Value>(v).is_ok_and(|v| &v == item)
    } else if let Some(i) = key.strip_prefix("i:") {
        i.parse::<usize>() == Ok(index)
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn set_and_index_keys_select_list_items() {
        assert!(item_matches("v:\"a\"", 0, &json!("a")));
        assert!(!item_matches("v:\"a\"", 0, &json!("b")));
        assert!(item_matches("i:2", 2, &json!({})));
        assert!(!item_matches("i:2", 1, &json!({})));
        assert!(!item_matches("x:1", 0, &json!(1)));
        let list = json!(["a", "b", "c"]);
        assert_eq!(
            project(&list, &json!({"v:\"a\"": {}, "v:\"c\"": {}})),
            json!(["a", "c"])
        );
    }
}
