//! Tests of the check of desired children: by hand-made children, and through a sync.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::*;
use crate::hook::Received;
use crate::sync::Options;

const STEADY: &str = include_str!("../../../tests/fixtures/sync/steady-state.json");

fn request(edit: impl FnOnce(&mut Value)) -> Value {
    let mut request: Value = serde_json::from_str(STEADY).expect("fixture");
    edit(&mut request);
    request
}

/// The children a sync of `request` answers, or the violations of its InvalidSpec status.
fn sync(request: &Value, options: &Options) -> Result<Vec<Value>, String> {
    let body = serde_json::to_vec(request).expect("encode");
    let received = Received::decode(body).expect("decode");
    let answer = crate::sync::sync(&received, Timestamp::UNIX_EPOCH, options).expect("sync");
    let status = serde_json::to_value(&answer.status).expect("status");
    let invalid = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["reason"] == "InvalidSpec")
        .map(|c| c["message"].as_str().unwrap_or_default().to_owned());
    match invalid {
        Some(message) => Err(message),
        None => Ok(serde_json::to_value(&answer.children)
            .expect("children")
            .as_array()
            .cloned()
            .unwrap_or_default()),
    }
}

fn with_service_annotations(value: &str, count: usize) -> Value {
    request(|r| {
        let annotations: serde_json::Map<String, Value> = (0..count)
            .map(|i| (format!("a{i}"), json!(value)))
            .collect();
        r["parent"]["spec"]["service"] = json!({"annotations": annotations});
    })
}

#[test]
fn annotations_the_spec_allows_but_the_stored_service_would_not_fit_are_invalid() {
    let options = Options::default();
    // 2 × 64 KiB = 128 KiB, the spec's bound: stored twice, over 256 KiB.
    let at_bound = with_service_annotations(&"a".repeat(64 * 1024 - 2), 2);
    let message = sync(&at_bound, &options).expect_err("over 256 KiB as stored");
    assert!(
        message.contains("Service/cache.metadata.annotations: Too long: may not be more than 262144 bytes in total as stored"),
        "{message}"
    );
    // Half of it fits.
    let half = with_service_annotations(&"a".repeat(32 * 1024), 2);
    assert!(sync(&half, &options).is_ok());
    // The same half, in `<`, does not: Go's encoding writes each as 6 bytes.
    let escaped = with_service_annotations(&"<".repeat(32 * 1024), 2);
    let message = sync(&escaped, &options).expect_err("escapes counted");
    assert!(
        message.contains("Go's JSON encoding writes <, > and & as 6 bytes"),
        "{message}"
    );
}

#[test]
fn a_restart_trigger_too_large_for_the_stored_deployment_is_invalid() {
    let options = Options::default();
    let big = request(|r| {
        r["parent"]["metadata"]["annotations"] =
            json!({"memcached.c5c3.io/restart-trigger": "t".repeat(255 * 1024)});
    });
    // A parent may carry up to 256 KiB of annotations; the Deployment stores its own and more.
    let message = sync(&big, &options)
        .map(|_| ())
        .expect_err("trigger over the budget");
    assert!(
        message.contains("Deployment/cache.metadata.annotations: Too long"),
        "{message}"
    );
    let small = request(|r| {
        r["parent"]["metadata"]["annotations"] =
            json!({"memcached.c5c3.io/restart-trigger": "2026-11-25T00:00:00Z"});
    });
    assert!(sync(&small, &options).is_ok());
}

#[test]
fn an_image_of_the_options_the_runtime_refuses_is_invalid() {
    let secured = |r: &mut Value| {
        r["parent"]["spec"]["security"] = json!({
            "tls": {"enabled": true, "certificateSecretRef": {"name": "cache-tls"}},
            "secretRotation": "Reload"
        });
    };
    let options = Options {
        reload_agent_image: " memcached-hook:1 ".into(),
        ..Options::default()
    };
    assert!(sync(&request(secured), &Options::default()).is_ok());
    let message = sync(&request(secured), &options).expect_err("the agent's image is checked");
    assert!(
        message.contains(".image: Invalid value: \" memcached-hook:1 \": must not have leading or trailing whitespace"),
        "{message}"
    );
}

/// A Service and a StatefulSet breaking each rule once.
fn hand_made_children(name: &str) -> [Child; 2] {
    use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
    use k8s_openapi::api::core::v1::{Container, PodSpec, Service};
    use std::collections::BTreeMap;

    let labels = BTreeMap::from([
        (CONTROLLER_UID.to_owned(), "x".to_owned()),
        ("bad key!".to_owned(), "v".to_owned()),
        ("team".to_owned(), "a b".to_owned()),
    ]);
    let service = Service {
        metadata: ObjectMeta {
            name: Some("1cache".into()),
            labels: Some(labels),
            annotations: Some(BTreeMap::from([(LAST_APPLIED.to_owned(), "{}".to_owned())])),
            ..ObjectMeta::default()
        },
        ..Service::default()
    };
    let statefulset = StatefulSet {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(StatefulSetSpec {
            template: PodTemplateSpec {
                spec: Some(PodSpec {
                    containers: vec![
                        Container {
                            name: "a".into(),
                            image: Some("mem\ncached".into()),
                            ..Container::default()
                        },
                        Container {
                            name: "b".into(),
                            ..Container::default()
                        },
                    ],
                    ..PodSpec::default()
                }),
                ..PodTemplateSpec::default()
            },
            ..StatefulSetSpec::default()
        }),
        ..StatefulSet::default()
    };
    [
        Child::Service(Box::new(service)),
        Child::StatefulSet(Box::new(statefulset)),
    ]
}

#[test]
fn hand_made_children_are_checked_by_the_api_servers_rules() {
    let name = "s".repeat(53);
    let children = hand_made_children(&name);
    let found: Vec<String> = check(&children).iter().map(ToString::to_string).collect();
    let want = [
        "Service/1cache.metadata.name: Invalid value: \"1cache\": must be a DNS-1035 label",
        "Service/1cache.metadata.labels: Invalid value: \"bad key!\": must be a qualified name",
        "Service/1cache.metadata.labels: Invalid value: \"controller-uid\": may not be set",
        "Service/1cache.metadata.labels: Invalid value: \"team\": must be a label value",
        "Service/1cache.metadata.annotations: Invalid value: \"metacontroller.k8s.io/last-applied-configuration\": may not be set",
        &format!("StatefulSet/{name}.metadata.name: Invalid value: \"{name}\": must be at most 52"),
        &format!(
            "StatefulSet/{name}.spec.template.spec.containers[a].image: Invalid value: \"mem\\ncached\": must not contain control characters"
        ),
        &format!("StatefulSet/{name}.spec.template.spec.containers[b].image: Required value"),
    ];
    assert_eq!(found.len(), want.len(), "{found:#?}");
    for (found, want) in found.iter().zip(want) {
        assert!(
            found.starts_with(want),
            "{found}\n  does not start with\n{want}"
        );
    }
}

#[test]
fn every_fixture_that_syncs_gives_children_the_cluster_accepts() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sync");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        let body = std::fs::read(&path).expect("read");
        let Ok(received) = Received::decode(body) else {
            continue;
        };
        let Ok(answer) = crate::sync::sync(&received, Timestamp::UNIX_EPOCH, &Options::default())
        else {
            continue;
        };
        assert_eq!(check(&answer.children), [], "{}", path.display());
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn selectors_tolerations_and_topology_keys_copied_verbatim_are_checked() {
    let options = Options::default();
    let cases = [
        (
            json!({"tolerations": [{"key": "bad key!", "operator": "Exists"}]}),
            "Deployment/cache.spec.template.spec.tolerations[0].key: Invalid value: \"bad key!\"",
        ),
        (
            json!({"tolerations": [{"key": "dedicated", "operator": "Exists", "value": "cache"}]}),
            "Deployment/cache.spec.template.spec.tolerations[0].operator",
        ),
        (
            json!({"tolerations": [{"key": "dedicated", "effect": "Sometimes"}]}),
            "Deployment/cache.spec.template.spec.tolerations[0].effect",
        ),
        (
            json!({"highAvailability": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a b"}}}]}}),
            "Deployment/cache.spec.template.spec.topologySpreadConstraints[0].labelSelector.matchLabels.app",
        ),
        (
            json!({"highAvailability": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}]}}),
            "Deployment/cache.spec.template.spec.topologySpreadConstraints[0].topologyKey: Required value",
        ),
        (
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Near"}]}]}}}}),
            "Deployment/cache.spec.template.spec.affinity.nodeAffinity.terms[0].matchExpressions[0].operator",
        ),
        (
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}]}}}),
            "Deployment/cache.spec.template.spec.affinity.podAffinity.terms[0].labelSelector.matchExpressions[0].values: Required value",
        ),
        (
            json!({"security": {"networkPolicy": {"enabled": true, "allowedSources": [{"podSelector": {"matchLabels": {"role/x/y": "client"}}}]}}}),
            "NetworkPolicy/cache.spec.ingress[0].from[0].podSelector.matchLabels: Invalid value: \"role/x/y\"",
        ),
    ];
    for (spec, want) in cases {
        let body = request(|r| {
            for (key, value) in spec.as_object().expect("object") {
                r["parent"]["spec"][key] = value.clone();
            }
        });
        let message = sync(&body, &options).map(|_| ()).expect_err(want);
        assert!(message.contains(want), "{spec}:\n{message}");
    }
    let fine = request(|r| {
        r["parent"]["spec"]["tolerations"] = json!([{"key": "dedicated", "operator": "Equal", "value": "cache", "effect": "NoSchedule"}]);
    });
    assert!(sync(&fine, &options).is_ok());
}
