//! The pod programs of an older release keep working under a newer hook: what the reload agent
//! writes on its Pod and the warm-restart guard's termination message, as today's programs
//! write them (`tests/fixtures/upgrade/programs/`), are read by the hook into `SecretReload` and
//! `WarmRestart`. A pod keeps running the programs of the release that rendered its template,
//! so a change to what they write, or to how the hook reads it, must keep reading these.

use std::path::{Path, PathBuf};

use memcached_hook::pod::reload_agent::condition::Desired;
use memcached_hook::pod::reload_agent::pod_condition::patch_body;
use memcached_hook::pod::warm::guard::Verdict;
use serde_json::{Value, json};

use crate::common::{condition, sync_with};

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade/programs")
}

fn fixture(name: &str) -> String {
    let path = programs().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const AT: &str = "2026-12-02T07:00:00Z";

/// The agent's patches, as today's agent writes them.
fn agent_patches() -> [(&'static str, String); 2] {
    let failed = Desired {
        status: "False",
        reason: "ReloadFailed",
        message: "tls: the certificate does not match the key".to_owned(),
    };
    let reloaded = Desired {
        status: "True",
        reason: "Reloaded",
        message: "memcached took the mounted Secret (tls)".to_owned(),
    };
    [
        ("agent-reload-failed.json", patch_body(&failed, AT)),
        ("agent-reloaded.json", patch_body(&reloaded, AT)),
    ]
}

/// The guard's results, as today's guard writes them.
fn guard_lines() -> [(&'static str, String); 2] {
    [
        (
            "guard-restore.txt",
            Verdict::Restore { age: 12, wait: 0 }.line(),
        ),
        (
            "guard-cold.txt",
            Verdict::Cold("no saved metadata".to_owned()).line(),
        ),
    ]
}

/// Today's programs write what the fixtures hold (`UPDATE_EXPECT=1` writes them): a change
/// shows here first; the fixtures of the release before it then stay, for the reading tests.
#[test]
fn todays_programs_write_what_the_fixtures_hold() {
    let [(_, failed), (_, reloaded)] = agent_patches();
    let [(_, restore), (_, cold)] = guard_lines();
    expect_test::expect_file!["../fixtures/upgrade/programs/agent-reload-failed.json"]
        .assert_eq(&failed);
    expect_test::expect_file!["../fixtures/upgrade/programs/agent-reloaded.json"]
        .assert_eq(&reloaded);
    expect_test::expect_file!["../fixtures/upgrade/programs/guard-restore.txt"].assert_eq(&restore);
    expect_test::expect_file!["../fixtures/upgrade/programs/guard-cold.txt"].assert_eq(&cold);
}

/// A related Pod of the Memcached `cache` in `shop`, named `name`, with `status`.
fn pod(name: &str, status: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "shop",
                        "labels": {"app.kubernetes.io/instance": "cache",
                                   "app.kubernetes.io/name": "memcached",
                                   "app.kubernetes.io/managed-by": "memcached-operator"}},
           "status": status})
}

fn request(spec: Value, pods: &[Value]) -> Value {
    let mut related = json!({"Secret.v1": {"shop/cache-tls": {"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cache-tls", "namespace": "shop"},
        "data": {"tls.crt": "Q0VSVA==", "tls.key": "S0VZ", "ca.crt": "Q0E="}}}, "Pod.v1": {}});
    for p in pods {
        let key = format!("shop/{}", p["metadata"]["name"].as_str().expect("named"));
        related["Pod.v1"][key] = p.clone();
    }
    json!({
        "controller": crate::common::controller(),
        "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                   "metadata": {"name": "cache", "namespace": "shop", "generation": 1},
                   "spec": spec},
        "children": {},
        "related": related
    })
}

fn relating() -> memcached_hook::Options {
    memcached_hook::Options {
        relate_pods: true,
        reload_agent_image: "ghcr.io/c5c3/memcached-hook:0.1.0".into(),
        ..memcached_hook::Options::default()
    }
}

#[test]
fn the_agents_pod_condition_of_the_fixtures_is_read_into_secret_reload() {
    let spec = json!({"security": {"secretRotation": "Reload",
        "tls": {"enabled": true, "certificateSecretRef": {"name": "cache-tls"}}}});
    let failed: Value = serde_json::from_str(&fixture("agent-reload-failed.json")).expect("json");
    let reloaded: Value = serde_json::from_str(&fixture("agent-reloaded.json")).expect("json");
    let pods = [
        pod("cache-0", failed["status"].clone()),
        pod("cache-1", reloaded["status"].clone()),
    ];
    let answer = sync_with(&request(spec, &pods), &relating());
    let c = condition(&answer, "SecretReload");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "ReloadFailed"),
        "{}",
        c.message
    );
    assert!(
        c.message
            .contains("cache-0: tls: the certificate does not match the key"),
        "{}",
        c.message
    );
    assert!(!c.message.contains("cache-1"), "{}", c.message);
}

#[test]
fn the_guards_termination_messages_of_the_fixtures_are_read_into_warm_restart() {
    let spec = json!({"workload": "StatefulSet", "warmRestart": {"enabled": true}});
    let ended = |line: String| {
        json!({"initContainerStatuses": [{"name": "warm-restart-guard",
            "state": {"terminated": {"exitCode": 0, "message": line}}}]})
    };
    let pods = [
        pod("cache-0", ended(fixture("guard-restore.txt"))),
        pod("cache-1", ended(fixture("guard-cold.txt"))),
    ];
    let mut controller = crate::common::controller();
    controller["spec"]["childResources"]
        .as_array_mut()
        .expect("a list")
        .push(json!({"apiVersion": "apps/v1", "resource": "statefulsets"}));
    let mut req = request(spec, &pods);
    req["controller"] = controller;
    let answer = sync_with(&req, &relating());
    let c = condition(&answer, "WarmRestart");
    assert!(c.message.contains("cache-0"), "{}", c.message);
    assert!(c.message.contains("no saved metadata"), "{}", c.message);
}
