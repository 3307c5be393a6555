//! The `memcached.c5c3.io/running-layouts` annotation of a StatefulSet with warm restart, over
//! the syncs of a rollout as Metacontroller runs them: each sync observes what the previous
//! answer applied, so `LayoutChange` must last until the StatefulSet has rolled out.

use serde_json::{Value, json};

use crate::common::{child, condition, must, sync_value};
use crate::warm_restart::{observed, request, warm_claim, warm_spec};
use crate::workload::answered_kinds;

const ANNOTATION: &str = "memcached.c5c3.io/running-layouts";
const OLD: &str = r#"[["-I","1m","-m","64"]]"#;
const NEW: &str = r#"[["-I","2m","-m","64"]]"#;
const BOTH: &str = r#"[["-I","1m","-m","64"],["-I","2m","-m","64"]]"#;

/// The StatefulSet of `answer` as Metacontroller's dynamic apply leaves it (the answer in the
/// last-applied annotation) at `generation`, with `status`.
fn applied(answer: &Value, generation: i64, status: Value) -> Value {
    let mut sts = crate::common::applied(must(answer, "StatefulSet"), &json!("shop"));
    sts["metadata"]["generation"] = json!(generation);
    sts["status"] = status;
    sts
}

/// A StatefulSet status: the controller saw `observed`, `updated` of 3 pods on `update`.
fn status(observed: i64, updated: i64, current: &str, update: &str) -> Value {
    json!({"observedGeneration": observed, "replicas": 3, "readyReplicas": 3,
           "updatedReplicas": updated, "currentRevision": current, "updateRevision": update})
}

fn sync(spec: &Value, sts: Value) -> Value {
    sync_value(&request(
        spec.clone(),
        json!({"StatefulSet.apps/v1": {"cache": sts}}),
    ))
}

/// The annotation answered, and the `WarmRestart` reason.
fn said(answer: &Value) -> (&str, String) {
    let annotation = must(answer, "StatefulSet")["metadata"]["annotations"][ANNOTATION]
        .as_str()
        .expect("the annotation");
    (annotation, condition(answer, "WarmRestart").reason)
}

fn spec(item_size: &str) -> Value {
    warm_spec(json!({"memcached": {"maxItemSize": item_size},
                     "warmRestart": {"enabled": true, "size": "132Mi"}}))
}

#[test]
fn layout_change_lasts_until_the_statefulset_has_rolled_out() {
    let (old, new) = (spec("1m"), spec("2m"));
    let first = sync_value(&request(old.clone(), json!({})));
    assert_eq!(said(&first), (OLD, "Enabled".to_owned()));
    let steady = sync(&old, applied(&first, 1, status(1, 3, "r1", "r1")));
    assert_eq!(said(&steady), (OLD, "Enabled".to_owned()));
    // The sync that starts the rollout.
    let start = sync(&new, applied(&steady, 1, status(1, 3, "r1", "r1")));
    assert_eq!(said(&start), (OLD, "LayoutChange".to_owned()));
    // Metacontroller applied the new template at once: every later sync of the rollout.
    let mut answer = start;
    for status in [
        status(1, 3, "r1", "r1"),
        status(2, 0, "r1", "r2"),
        status(2, 2, "r1", "r2"),
        status(2, 3, "r1", "r2"),
    ] {
        answer = sync(&new, applied(&answer, 2, status.clone()));
        assert_eq!(said(&answer), (BOTH, "LayoutChange".to_owned()), "{status}");
        let c = condition(&answer, "WarmRestart");
        assert!(c.message.ends_with("this changes -I 1m -> 2m"), "{c:?}");
    }
    let done = sync(&new, applied(&answer, 2, status(2, 3, "r2", "r2")));
    assert_eq!(said(&done), (NEW, "Enabled".to_owned()));
}

#[test]
fn a_statefulset_of_an_older_hook_is_taken_as_running_its_template() {
    // No annotation, the rollout to 2m under way: the old pods are not known any more.
    let sts = observed(
        "StatefulSet",
        3,
        warm_claim("132Mi"),
        &["-m", "64", "-I", "2m"],
    );
    let mut rolling = sts.clone();
    rolling["status"]["updatedReplicas"] = json!(1);
    for observed in [sts, rolling] {
        let answer = sync(&spec("2m"), observed);
        assert_eq!(said(&answer), (NEW, "Enabled".to_owned()));
    }
}

#[test]
fn an_invalid_spec_during_the_rollout_keeps_the_annotation() {
    let start = sync(
        &spec("2m"),
        observed(
            "StatefulSet",
            3,
            warm_claim("132Mi"),
            &["-m", "64", "-I", "1m"],
        ),
    );
    let rolling = sync(&spec("2m"), applied(&start, 2, status(2, 1, "r1", "r2")));
    assert_eq!(said(&rolling).0, BOTH);
    let mut invalid = spec("2m");
    invalid["warmRestart"]["size"] = json!("lots");
    let kept = sync(&invalid, applied(&rolling, 2, status(2, 2, "r1", "r2")));
    assert_eq!(condition(&kept, "Degraded").reason, "InvalidSpec");
    assert_eq!(
        must(&kept, "StatefulSet")["metadata"]["annotations"][ANNOTATION],
        BOTH,
        "kept as last applied"
    );
    // Valid again, still rolling out: still announced.
    let back = sync(&spec("2m"), applied(&rolling, 2, status(2, 2, "r1", "r2")));
    assert_eq!(said(&back), (BOTH, "LayoutChange".to_owned()));
}

#[test]
fn only_a_statefulset_with_warm_restart_carries_it() {
    let annotations = |answer: &Value, kind: &str| {
        child(answer, kind).map(|c| c["metadata"]["annotations"][ANNOTATION].clone())
    };
    let plain = sync_value(&request(
        json!({"workload": "StatefulSet", "replicas": 3}),
        json!({}),
    ));
    assert_eq!(annotations(&plain, "StatefulSet"), Some(Value::Null));
    let deployment = sync_value(&request(json!({"replicas": 3}), json!({})));
    assert_eq!(annotations(&deployment, "Deployment"), Some(Value::Null));
    // A claim template that changes: the Deployment takes over, the StatefulSet is kept as it is.
    let bridge = sync(
        &warm_spec(json!({})),
        observed("StatefulSet", 3, warm_claim("1Gi"), &["-m", "64"]),
    );
    assert_eq!(answered_kinds(&bridge), ["Deployment", "StatefulSet"]);
    assert_eq!(annotations(&bridge, "Deployment"), Some(Value::Null));
    assert_eq!(condition(&bridge, "WarmRestart").reason, "VolumeChange");
}
