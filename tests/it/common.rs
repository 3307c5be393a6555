//! Helpers shared by the integration tests.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, PodSpec, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use memcached_hook::api::MemcachedStatus;
use memcached_hook::hook::Received;
use serde_json::{Value, json};

/// The fixed "now" of every test.
pub fn now() -> Timestamp {
    "2026-11-22T12:00:00Z".parse().expect("a valid timestamp")
}

/// Every child kind the hook emits, as a CompositeController declares them.
pub fn controller() -> Value {
    json!({"spec": {"childResources": [
        {"apiVersion": "apps/v1", "resource": "deployments"},
        {"apiVersion": "v1", "resource": "services"},
        {"apiVersion": "policy/v1", "resource": "poddisruptionbudgets"},
        {"apiVersion": "networking.k8s.io/v1", "resource": "networkpolicies"},
        {"apiVersion": "autoscaling/v2", "resource": "horizontalpodautoscalers"},
        {"apiVersion": "monitoring.coreos.com/v1", "resource": "servicemonitors"}
    ]}})
}

/// A first-sync request for the Memcached `my-cache` in `default` with `spec`.
pub fn request_json(spec: Value) -> Value {
    json!({
        "controller": controller(),
        "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                   "metadata": {"name": "my-cache", "namespace": "default", "generation": 1}, "spec": spec},
        "children": {"Deployment.apps/v1": {}, "Service.v1": {}, "PodDisruptionBudget.policy/v1": {}},
        "related": {}
    })
}

/// Decodes a request the way the server does, but keeps no body: observed children are kept
/// by their last-applied annotation only.
pub fn decode(value: &Value) -> Received<'static> {
    let body = serde_json::to_vec(value).expect("encodes");
    Received::built(memcached_hook::hook::decode(&body).expect("a well-formed request"))
}

/// Runs `sync` as the server does (with the request body) and returns the response as JSON.
pub fn sync_value(request: &Value) -> Value {
    sync_with(request, &memcached_hook::Options::default())
}

/// [`sync_value`] for a hook run with `options`.
pub fn sync_with(request: &Value, options: &memcached_hook::Options) -> Value {
    let body = serde_json::to_vec(request).expect("encodes");
    let received = Received::decode(body).expect("a well-formed request");
    let response = memcached_hook::sync(&received, now(), options).expect("sync succeeds");
    serde_json::to_value(&response).expect("the response encodes")
}

/// The response to a first sync with `spec`.
pub fn render(spec: Value) -> Value {
    sync_value(&request_json(spec))
}

/// The child of `kind` in a response, if any.
pub fn child<'a>(response: &'a Value, kind: &str) -> Option<&'a Value> {
    response["children"]
        .as_array()?
        .iter()
        .find(|c| c["kind"] == kind)
}

/// The child of `kind`, which must be there.
pub fn must<'a>(response: &'a Value, kind: &str) -> &'a Value {
    child(response, kind).unwrap_or_else(|| panic!("no {kind} in {response:#}"))
}

/// The condition of `type_` in a response's status, decoded into `metav1.Condition` (which
/// also checks that it has every required field).
pub fn condition(response: &Value, type_: &str) -> Condition {
    response["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .map(|c| decoded(c.clone()))
        .unwrap_or_else(|| panic!("no {type_} condition in {response:#}"))
}

/// The child of `T`'s kind in a response, decoded into its k8s-openapi type. The decoding is
/// strict: the typed value must encode back to the very JSON the hook wrote, so a field the type
/// does not know (a misspelt or misplaced one) fails the test instead of being dropped, and a
/// typed comparison says as much as one of the JSON.
pub fn typed<T>(response: &Value) -> T
where
    T: k8s_openapi::Resource + serde::de::DeserializeOwned + serde::Serialize,
{
    strict(must(response, T::KIND))
}

/// `value` decoded into `T`, which must encode back to `value` (see [`typed`]).
pub fn strict<T: serde::de::DeserializeOwned + serde::Serialize>(value: &Value) -> T {
    round_trip(value).unwrap_or_else(|e| panic!("{e}"))
}

/// `value` decoded into `T` if it decodes and encodes back to `value`; else what differs.
pub fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(
    value: &Value,
) -> Result<T, String> {
    let typed: T = serde_json::from_value(value.clone())
        .map_err(|e| format!("does not decode as its type: {e}\n{value:#}"))?;
    let again = serde_json::to_value(&typed).expect("a typed object encodes");
    if &again == value {
        Ok(typed)
    } else {
        Err(format!(
            "fields the type does not know, or written differently:\n{value:#}\nencodes back as\n{again:#}"
        ))
    }
}

/// The child of `T`'s kind, if the response has one, decoded into its k8s-openapi type.
pub fn try_typed<T>(response: &Value) -> Option<T>
where
    T: k8s_openapi::Resource + serde::de::DeserializeOwned + serde::Serialize,
{
    child(response, T::KIND).map(|_| typed(response))
}

/// The pod spec of a response's Deployment.
pub fn pod_spec(response: &Value) -> PodSpec {
    typed::<Deployment>(response)
        .spec
        .and_then(|s| s.template.spec)
        .expect("the Deployment has a pod spec")
}

/// The memcached container of a response's Deployment, typed.
pub fn memcached(response: &Value) -> Container {
    pod_spec(response)
        .containers
        .into_iter()
        .next()
        .expect("a container")
}

/// A response's status, decoded into the CRD's status type.
pub fn status(response: &Value) -> MemcachedStatus {
    serde_json::from_value(response["status"].clone()).expect("the status decodes")
}

/// Where a request's `children` holds an observed child: its group (`Kind.apiVersion`, as
/// Metacontroller keys them) and its name.
pub fn observed_key(child: &Value) -> (String, String) {
    let meta: ObjectMeta = decoded(child["metadata"].clone());
    let (kind, api_version) = (child["kind"].as_str(), child["apiVersion"].as_str());
    (
        format!(
            "{}.{}",
            kind.expect("kind"),
            api_version.expect("apiVersion")
        ),
        meta.name.expect("name"),
    )
}

/// The annotation in which Metacontroller records what it applied to a child.
pub const LAST_APPLIED: &str = "metacontroller.k8s.io/last-applied-configuration";

/// What the next request observes of each applied child besides what was applied.
pub enum Observed<'a> {
    /// As just created: no status yet.
    Created,
    /// Settled: every workload's pods all ready and updated.
    Settled,
    /// Each child with the fields `f(child)` returns merged in (a status, server-side fields);
    /// `f` sees the child as applied.
    With(&'a dyn Fn(&Value) -> Value),
}

/// The request Metacontroller sends after applying `answer`, the answer to `request`: the same
/// controller, parent and related objects, the parent's status as answered (when it answered
/// one), and as observed children exactly the answered ones (the others deleted), each in the
/// parent's namespace at generation 1 with the last-applied annotation Metacontroller writes,
/// keyed by kind and name, plus what `observed` adds.
pub fn next_request(request: &Value, answer: &Value, observed: Observed<'_>) -> Value {
    let mut next = request.clone();
    if !answer["status"].is_null() {
        next["parent"]["status"] = answer["status"].clone();
    }
    let namespace = &request["parent"]["metadata"]["namespace"];
    if !next["children"].is_object() {
        next["children"] = json!({});
    }
    let groups = next["children"].as_object_mut().expect("an object");
    for group in groups.values_mut() {
        *group = json!({});
    }
    for child in answer["children"].as_array().map_or(&[][..], Vec::as_slice) {
        let mut live = applied(child, namespace);
        let extra = match observed {
            Observed::Created => json!({}),
            Observed::Settled => settled_status(child),
            Observed::With(f) => f(child),
        };
        merge(&mut live, &extra);
        let (group, name) = observed_key(&live);
        groups.entry(group).or_insert_with(|| json!({}))[name] = live;
    }
    next
}

/// `child` as Metacontroller's apply leaves it in `namespace`: at generation 1, with what it
/// applied in the last-applied annotation.
pub fn applied(child: &Value, namespace: &Value) -> Value {
    let mut live = child.clone();
    let record = serde_json::to_string(child).expect("JSON encodes");
    let meta = &mut live["metadata"];
    meta["namespace"] = namespace.clone();
    meta["generation"] = json!(1);
    meta["annotations"][LAST_APPLIED] = json!(record);
    live
}

/// The status of a settled `child`: a workload with all its replicas ready and up to date.
fn settled_status(child: &Value) -> Value {
    let replicas = child["spec"]["replicas"].as_i64().unwrap_or(1);
    match child["kind"].as_str() {
        Some("Deployment" | "StatefulSet") => json!({"status": {"observedGeneration": 1,
            "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas,
            "availableReplicas": replicas}}),
        _ => json!({}),
    }
}

/// `from` merged into `into`: objects field by field, anything else replaced.
pub fn merge(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// The words of `text`: an expected argument list written as the command line reads.
pub fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

/// A label map from pairs.
pub fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A JSON value decoded into a Kubernetes (or CRD) type.
pub fn decoded<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("the value decodes into its type")
}

#[test]
#[should_panic(expected = "fields the type does not know")]
fn strict_decoding_refuses_a_field_the_type_does_not_know() {
    strict::<Container>(&json!({"name": "memcached", "imagee": "memcached:1.6"}));
}

/// The container security context the hook writes when the spec sets none (Pod Security
/// `restricted`).
pub fn restricted_container() -> Value {
    serde_json::json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
                       "readOnlyRootFilesystem": true})
}

/// The pod security context the hook writes when the spec sets none.
pub fn restricted_pod() -> Value {
    serde_json::json!({"runAsNonRoot": true, "runAsUser": 11211, "runAsGroup": 11211,
                       "seccompProfile": {"type": "RuntimeDefault"}})
}

/// `base` with each top-level field of `over` replacing its own (both objects).
pub fn overlaid(mut base: Value, over: &Value) -> Value {
    if let (Some(b), Some(o)) = (base.as_object_mut(), over.as_object()) {
        for (k, v) in o {
            b.insert(k.clone(), v.clone());
        }
    }
    base
}

pub fn base_labels(name: &str) -> BTreeMap<String, String> {
    map(&[
        ("app.kubernetes.io/name", "memcached"),
        ("app.kubernetes.io/instance", name),
        ("app.kubernetes.io/managed-by", "memcached-operator"),
    ])
}

pub fn base_selector(name: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(base_labels(name)),
        match_expressions: None,
    }
}

/// Each field named with `true` (its typed value is `None`) must be absent; names those written.
pub fn assert_absent(fields: &[(&str, bool)]) {
    let written: Vec<&str> = (fields.iter().filter(|(_, absent)| !absent))
        .map(|(name, _)| *name)
        .collect();
    assert!(
        written.is_empty(),
        "written, but should be absent: {written:?}"
    );
}

/// The ports of a response's Service.
pub fn service_ports(r: &Value) -> Vec<ServicePort> {
    let spec = typed::<Service>(r).spec.expect("spec");
    spec.ports.expect("ports")
}

#[test]
fn the_next_request_observes_exactly_the_answered_children_as_applied() {
    let first = request_json(json!({"replicas": 3}));
    let answer = sync_value(&first);
    let next = next_request(&first, &answer, Observed::Settled);
    assert_eq!(next["parent"]["status"], answer["status"]);
    let answered = answer["children"].as_array().expect("children");
    let observed: Vec<&Value> = next["children"]
        .as_object()
        .expect("groups")
        .values()
        .flat_map(|group| group.as_object().expect("a group").values())
        .collect();
    assert_eq!(observed.len(), answered.len());
    for child in answered {
        let (group, name) = observed_key(child);
        let live = &next["children"][&group][&name];
        let record = live["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .expect("the last-applied annotation");
        assert_eq!(&serde_json::from_str::<Value>(record).expect("JSON"), child);
        assert_eq!(live["metadata"]["namespace"], "default");
    }
    let deployment = &next["children"]["Deployment.apps/v1"]["my-cache"];
    assert_eq!(deployment["status"]["readyReplicas"], 3, "settled");
}
