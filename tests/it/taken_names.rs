//! A child whose name another object holds: the customize hook asks for objects of the
//! children's names while the Memcached is not settled, and the status names the children
//! Metacontroller cannot create.

use serde_json::{Value, json};

use crate::common::{Observed, condition, controller, next_request, request_json, sync_value};

/// The customize answer for `parent` under the test controller.
fn customize(parent: &Value) -> Value {
    let req = serde_json::from_value(json!({"controller": controller(), "parent": parent}))
        .expect("request");
    let options = memcached_hook::Options::default();
    serde_json::to_value(memcached_hook::customize(&req, &options).expect("answer")).expect("json")
}

/// The names the customize answer asks for, per `apiVersion/resource`.
fn asked(answer: &Value) -> Vec<(String, Vec<String>)> {
    let rules = answer["relatedResources"].as_array().expect("a list");
    rules
        .iter()
        .filter(|r| r["names"].is_array() && r["resource"] != "secrets")
        .map(|r| {
            let names = r["names"].as_array().expect("names");
            (
                format!(
                    "{}/{}",
                    r["apiVersion"].as_str().expect("v"),
                    r["resource"].as_str().expect("r")
                ),
                names
                    .iter()
                    .map(|n| n.as_str().expect("a name").to_owned())
                    .collect(),
            )
        })
        .collect()
}

/// A Deployment `name` in `default` as the API server holds it, controlled by `owner`
/// (`(apiVersion, kind, name)`) if any.
fn deployment(name: &str, owner: Option<(&str, &str, &str)>) -> Value {
    let owners: Vec<Value> = owner
        .into_iter()
        .map(|(api_version, kind, owner)| {
            json!({"apiVersion": api_version, "kind": kind, "name": owner, "uid": "u-1",
                   "controller": true, "blockOwnerDeletion": true})
        })
        .collect();
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "uid": "d-1", "generation": 3,
                     "labels": {"app.kubernetes.io/managed-by": "Helm"},
                     "annotations": {"meta.helm.sh/release-name": name},
                     "ownerReferences": owners},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "memcached", "image": "memcached"}]}}},
        "status": {"observedGeneration": 3, "replicas": 1, "readyReplicas": 1,
                   "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                   "lastTransitionTime": "2026-11-01T00:00:00Z"},
                                  {"type": "Progressing", "status": "True"}]}
    })
}

#[test]
fn a_new_memcached_asks_for_objects_of_its_childrens_names() {
    let request =
        request_json(json!({"highAvailability": {"podDisruptionBudget": {"enabled": true}}}));
    let answer = customize(&request["parent"]);
    assert_eq!(
        asked(&answer),
        [
            (
                "apps/v1/deployments".to_owned(),
                vec!["my-cache".to_owned()]
            ),
            ("v1/services".to_owned(), vec!["my-cache".to_owned()]),
            (
                "policy/v1/poddisruptionbudgets".to_owned(),
                vec!["my-cache".to_owned()]
            ),
        ],
        "{answer}"
    );
    // Only the kinds the CompositeController declares, in the parent's namespace.
    for rule in answer["relatedResources"].as_array().expect("a list") {
        assert_eq!(rule["namespace"], "default", "{rule}");
    }
}

#[test]
fn a_settled_memcached_asks_for_none_and_a_changed_one_asks_again() {
    let request = request_json(json!({}));
    let answer = sync_value(&request);
    let mut next = next_request(&request, &answer, Observed::Settled);
    let settled = sync_value(&next);
    next["parent"]["status"] = settled["status"].clone();
    next["parent"]["status"]["observedGeneration"] = json!(1);
    assert_eq!(condition(&settled, "Ready").status, "True", "{settled}");
    assert_eq!(customize(&next["parent"]), json!({"relatedResources": []}));
    // A spec change (a new generation) is not settled until the hook has answered it.
    next["parent"]["metadata"]["generation"] = json!(2);
    next["parent"]["spec"] =
        json!({"highAvailability": {"podDisruptionBudget": {"enabled": true}}});
    let asked = asked(&customize(&next["parent"]));
    assert!(
        asked
            .iter()
            .any(|(r, _)| r == "policy/v1/poddisruptionbudgets"),
        "{asked:?}"
    );
}

/// The reference operator's status (Ready at the current generation, as it writes it before its
/// Memcacheds move to the hook) is none of this hook's answers: the names are asked for, so that
/// a child whose name its Deployment still holds is said at once.
#[test]
fn another_controllers_ready_status_is_not_settled() {
    let mut request = request_json(json!({}));
    request["parent"]["metadata"]["generation"] = json!(4);
    request["parent"]["status"] = json!({"observedGeneration": 4, "readyReplicas": 1,
        "conditions": [{"type": "Ready", "status": "True", "reason": "MemcachedReady",
                        "lastTransitionTime": "2026-11-01T00:00:00Z", "message": "",
                        "observedGeneration": 4}]});
    let asked = asked(&customize(&request["parent"]));
    assert!(
        asked.iter().any(|(r, _)| r == "apps/v1/deployments"),
        "{asked:?}"
    );
    // The same status with the field only this hook writes: settled.
    request["parent"]["status"]["desiredReplicas"] = json!(1);
    assert_eq!(
        customize(&request["parent"]),
        json!({"relatedResources": []})
    );
}

#[test]
fn an_invalid_spec_asks_for_no_names() {
    let request = request_json(json!({"replicas": -1}));
    assert!(asked(&customize(&request["parent"])).is_empty());
}

#[test]
fn a_taken_name_is_named_in_ready_and_degraded() {
    let mut request = request_json(json!({}));
    request["related"] = json!({"Deployment.apps/v1": {"my-cache": deployment("my-cache", None)}});
    let answer = sync_value(&request);
    let ready = condition(&answer, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ChildNameTaken")
    );
    assert_eq!(
        ready.message,
        "Cannot create Deployment my-cache (controlled by no one): an object of that name already \
         exists and is not this Memcached's. Delete or rename that object, or give this Memcached \
         another name"
    );
    let degraded = condition(&answer, "Degraded");
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "ChildNameTaken")
    );
    // The children are answered as ever: Metacontroller creates the others.
    let kinds: Vec<&str> = answer["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|c| c["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds, ["Deployment", "Service"]);
}

#[test]
fn a_name_another_memcached_controls_is_named_with_it() {
    let mut request = request_json(json!({}));
    let other = deployment(
        "my-cache",
        Some(("memcached.c5c3.io/v1beta1", "Memcached", "cache")),
    );
    request["related"] = json!({"Deployment.apps/v1": {"my-cache": other}});
    let ready = condition(&sync_value(&request), "Ready");
    assert_eq!(ready.reason, "ChildNameTaken");
    assert!(
        ready
            .message
            .contains("Deployment my-cache (controlled by Memcached cache)"),
        "{}",
        ready.message
    );
}

#[test]
fn its_own_children_are_never_taken() {
    // Created, not observed yet: its controller is this Memcached.
    let mut request = request_json(json!({}));
    let own = deployment(
        "my-cache",
        Some(("memcached.c5c3.io/v1beta1", "Memcached", "my-cache")),
    );
    request["related"] = json!({"Deployment.apps/v1": {"my-cache": own}});
    assert_ne!(
        condition(&sync_value(&request), "Ready").reason,
        "ChildNameTaken"
    );
    // Observed as a child: the related copy of it is the same object.
    let answer = sync_value(&request_json(json!({})));
    let mut next = next_request(&request_json(json!({})), &answer, Observed::Settled);
    let observed = next["children"]["Deployment.apps/v1"]["my-cache"].clone();
    next["related"] = json!({"Deployment.apps/v1": {"my-cache": observed}});
    let answer = sync_value(&next);
    let ready = condition(&answer, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "MemcachedReady")
    );
}

#[test]
fn the_secrets_beside_the_names_are_read_as_before() {
    // A related Secret and a related Deployment of another name in one request.
    let spec =
        json!({"security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": "creds"}}}});
    let mut request = request_json(spec);
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": "creds", "namespace": "default"},
                        "data": {"password-file": "dXNlcjpwYXNz"}});
    request["related"] = json!({"Deployment.apps/v1": {"other": deployment("other", None)}});
    assert_eq!(
        condition(&sync_value(&request), "Degraded").reason,
        "SecretNotFound"
    );
    request["related"]["Secret.v1"] = json!({"creds": secret});
    let answer = sync_value(&request);
    assert_ne!(
        condition(&answer, "Degraded").reason,
        "SecretNotFound",
        "{answer}"
    );
    assert_ne!(
        condition(&answer, "Ready").reason,
        "ChildNameTaken",
        "{answer}"
    );
}
