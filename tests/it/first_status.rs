//! A new Memcached gets one status write: its first sync answers the status that the sync after
//! Metacontroller created the children (which have no status yet) computes again, so that second
//! sync writes nothing; a sync that still finds no workload after that says it waits for it.

use serde_json::{Value, json};

use crate::common::{Observed, condition, next_request, request_json, sync_value};

fn with_statefulsets(mut request: Value) -> Value {
    let resources = request["controller"]["spec"]["childResources"]
        .as_array_mut()
        .expect("list");
    resources.push(json!({"apiVersion": "apps/v1", "resource": "statefulsets"}));
    request["children"]["StatefulSet.apps/v1"] = json!({});
    request
}

fn cases() -> Vec<(&'static str, Value)> {
    vec![
        ("defaults", request_json(json!({}))),
        (
            "three replicas with a budget",
            request_json(json!({
                "replicas": 3,
                "highAvailability": {"podDisruptionBudget": {"enabled": true}}
            })),
        ),
        ("scaled to zero", request_json(json!({"replicas": 0}))),
        (
            "autoscaled",
            request_json(json!({
                "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 6},
                "resources": {"requests": {"cpu": "100m"}}
            })),
        ),
        (
            "StatefulSet",
            with_statefulsets(request_json(
                json!({"replicas": 3, "workload": "StatefulSet"}),
            )),
        ),
    ]
}

#[test]
fn the_sync_after_creation_computes_the_first_status_again() {
    for (name, request) in cases() {
        let first = sync_value(&request);
        let second = sync_value(&next_request(&request, &first, Observed::Created));
        assert_eq!(second["status"], first["status"], "{name}");
        assert_eq!(second["children"], first["children"], "{name}");
    }
}

#[test]
fn a_workload_still_missing_after_the_first_sync_is_waited_for() {
    let request = request_json(json!({"replicas": 2}));
    let first = sync_value(&request);
    assert_eq!(
        condition(&first, "Progressing").message,
        "Rollout in progress: 0/2 replicas updated"
    );
    // Metacontroller wrote the status but the Deployment was not created (say, refused).
    let mut again = request.clone();
    again["parent"]["status"] = first["status"].clone();
    let second = sync_value(&again);
    for type_ in ["Progressing", "Degraded", "Ready"] {
        assert_eq!(
            condition(&second, type_).message,
            "Waiting for deployment to be created",
            "{type_}"
        );
    }
}
