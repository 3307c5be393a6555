use serde_json::{Value, json};

use super::*;

fn layout(args: &str) -> MemorySettings {
    let args: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
    MemorySettings::of(&args)
}

const OLD: &str = r#"[["-I","1m","-m","64"]]"#;
const NEW: &str = r#"[["-I","2m","-m","64"]]"#;
const BOTH: &str = r#"[["-I","1m","-m","64"],["-I","2m","-m","64"]]"#;

/// A StatefulSet of 3 replicas at `generation`, memcached with `args`, the `annotation` (if
/// any) and the rollout `status`.
fn sts(generation: i64, args: &str, annotation: Option<&str>, status: &Value) -> ObservedChild {
    let args: Vec<&str> = args.split_whitespace().collect();
    let mut metadata = json!({"name": "cache", "generation": generation});
    if let Some(a) = annotation {
        metadata["annotations"] = json!({ANNOTATION: a, "other": "x"});
    }
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": metadata,
        "spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "reload-agent", "args": ["-m", "1"]},
            {"name": "memcached", "args": args}]}}},
        "status": status,
    }))
    .expect("observed StatefulSet")
}

/// The status of a StatefulSet whose controller saw `observed`, with `updated` of 3 pods on
/// the update revision `update` (the current one is `r1`).
fn status(observed: i64, updated: i32, update: &str) -> Value {
    json!({"observedGeneration": observed, "replicas": 3, "readyReplicas": 3,
           "updatedReplicas": updated, "currentRevision": "r1", "updateRevision": update})
}

fn settled() -> Value {
    status(1, 3, "r1")
}

/// The annotation and the changes a sync of `spec` answers for `observed`.
fn answer(spec: &str, observed: Option<&ObservedChild>) -> (String, Vec<String>) {
    let l = Layouts::from_spec(layout(spec), observed);
    (l.annotation(), l.changes())
}

const ARGS_1M: &str = "-m 64 -c 1024 -t 4 -I 1m -X -W -e /warm-restart/memory";
const ARGS_2M: &str = "-m 64 -c 1024 -t 8 -I 2m -X -W -e /warm-restart/memory";

#[test]
fn a_new_statefulset_holds_the_specs_layout() {
    assert_eq!(answer(ARGS_1M, None), (OLD.to_owned(), vec![]));
}

#[test]
fn the_sync_that_starts_the_rollout_records_the_old_layout() {
    let observed = sts(1, ARGS_1M, Some(OLD), &settled());
    let (annotation, changes) = answer(ARGS_2M, Some(&observed));
    assert_eq!(annotation, OLD);
    assert_eq!(changes, ["-I 1m -> 2m"]);
}

#[test]
fn every_sync_during_the_rollout_announces_it() {
    // Metacontroller applied the new template: generation 2, not yet seen; then seen with a
    // new update revision and 0, 1, 2 pods updated.
    for status in [
        status(1, 3, "r1"),
        status(2, 0, "r2"),
        status(2, 1, "r2"),
        status(2, 2, "r2"),
    ] {
        let observed = sts(2, ARGS_2M, Some(OLD), &status);
        assert_eq!(
            answer(ARGS_2M, Some(&observed)),
            (BOTH.to_owned(), vec!["-I 1m -> 2m".to_owned()]),
            "{status}"
        );
        // The next sync sees its own answer: the same.
        let again = sts(2, ARGS_2M, Some(BOTH), &status);
        assert_eq!(answer(ARGS_2M, Some(&again)).0, BOTH);
    }
}

#[test]
fn a_rolled_out_statefulset_holds_its_templates_layout() {
    let revisions = json!({"observedGeneration": 2, "replicas": 3, "readyReplicas": 3,
                           "updatedReplicas": 3, "currentRevision": "r2", "updateRevision": "r2"});
    let observed = sts(2, ARGS_2M, Some(BOTH), &revisions);
    assert_eq!(answer(ARGS_2M, Some(&observed)), (NEW.to_owned(), vec![]));
}

#[test]
fn a_partitioned_or_paused_rollout_is_not_done() {
    // Every pod counted but a revision left (a partition), or pods left on the old revision.
    for status in [status(2, 3, "r2"), status(2, 2, "r1")] {
        let observed = sts(2, ARGS_2M, Some(OLD), &status);
        assert_eq!(answer(ARGS_2M, Some(&observed)).0, BOTH);
    }
}

#[test]
fn a_spec_changed_back_during_the_rollout_still_discards_the_updated_pods_caches() {
    // The rollout 1m -> 2m is under way when the spec goes back to 1m: the updated pods restart
    // again, with the old layout.
    let observed = sts(2, ARGS_2M, Some(OLD), &status(2, 1, "r2"));
    assert_eq!(
        answer(ARGS_1M, Some(&observed)),
        (BOTH.to_owned(), vec!["-I 2m -> 1m".to_owned()])
    );
    // Metacontroller applied the old template again: still under way, still announced.
    let back = sts(3, ARGS_1M, Some(BOTH), &status(2, 1, "r2"));
    assert_eq!(
        answer(ARGS_1M, Some(&back)),
        (BOTH.to_owned(), vec!["-I 2m -> 1m".to_owned()])
    );
    // Rolled back (the StatefulSet controller reuses revision r1).
    let done = sts(3, ARGS_1M, Some(BOTH), &status(3, 3, "r1"));
    assert_eq!(answer(ARGS_1M, Some(&done)), (OLD.to_owned(), vec![]));
}

#[test]
fn a_third_layout_during_a_rollout_names_the_changes_from_both() {
    let observed = sts(2, ARGS_2M, Some(OLD), &status(2, 1, "r2"));
    let (annotation, changes) = answer("-m 128 -I 2m", Some(&observed));
    assert_eq!(annotation, BOTH);
    assert_eq!(changes, ["-I 1m -> 2m", "-m 64 -> 128"]);
}

#[test]
fn a_statefulset_without_the_annotation_holds_its_templates_layout() {
    // Written before the hook kept it, or with a value that is no list of argument lists.
    for annotation in [None, Some("-I 1m"), Some(r#"[["-I", 1]]"#), Some("")] {
        let observed = sts(2, ARGS_1M, annotation, &status(1, 3, "r1"));
        assert_eq!(
            answer(ARGS_2M, Some(&observed)),
            (OLD.to_owned(), vec!["-I 1m -> 2m".to_owned()]),
            "{annotation:?}"
        );
        let settled = sts(1, ARGS_1M, annotation, &settled());
        assert_eq!(answer(ARGS_1M, Some(&settled)), (OLD.to_owned(), vec![]));
    }
}

#[test]
fn zero_replicas_roll_out_at_once() {
    let mut observed = sts(
        2,
        ARGS_2M,
        Some(OLD),
        &json!({"observedGeneration": 2,
        "replicas": 0, "currentRevision": "r2", "updateRevision": "r2"}),
    );
    observed.spec.replicas = Some(0);
    assert_eq!(answer(ARGS_2M, Some(&observed)), (NEW.to_owned(), vec![]));
}

#[test]
fn the_annotation_is_sorted_whatever_order_it_was_read_in() {
    let reversed = r#"[["-I","2m","-m","64"],["-I","1m","-m","64"],["-m","64","-I","2m"]]"#;
    let observed = sts(2, ARGS_2M, Some(reversed), &status(2, 1, "r2"));
    assert_eq!(answer(ARGS_2M, Some(&observed)).0, BOTH);
}
