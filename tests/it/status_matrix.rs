//! The status: the reference operator's condition matrix, messages, serverList, and
//! lastTransitionTime (docs/behaviour.md).

use memcached_hook::api::Condition;
use memcached_hook::hook::ChildStatus;
use memcached_hook::status::{Inputs, build};

fn dep(ready: i32, updated: i32, total: i32) -> Option<ChildStatus> {
    Some(ChildStatus {
        replicas: Some(total),
        ready_replicas: Some(ready),
        updated_replicas: Some(updated),
        ..ChildStatus::default()
    })
}

fn inputs(spec_replicas: Option<i32>, deployment: Option<ChildStatus>) -> Inputs<'static> {
    Inputs {
        name: "cache",
        namespace: "shop",
        generation: Some(4),
        spec_replicas,
        workload: deployment,
        ..Inputs::default()
    }
}

const NOW: &str = "2026-11-22T12:00:00Z";

fn get<'a>(conditions: &'a [Condition], type_: &str) -> &'a Condition {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_}"))
}

/// `(status, reason)` of Available, Progressing, Degraded, Ready.
fn row(i: &Inputs<'_>) -> [(String, String); 4] {
    let status = build(i, &[], NOW);
    let c = status.conditions.expect("conditions");
    ["Available", "Progressing", "Degraded", "Ready"].map(|t| {
        let c = get(&c, t);
        (c.status.clone(), c.reason.clone())
    })
}

fn r(s: &[(&str, &str); 4]) -> [(String, String); 4] {
    s.map(|(a, b)| (a.to_owned(), b.to_owned()))
}

#[test]
fn reference_matrix() {
    let t = "True";
    let f = "False";
    let hpa = |spec, d| Inputs {
        autoscaling: true,
        ..inputs(spec, d)
    };
    let missing = Inputs {
        missing_secrets: vec!["sasl-secret".into()],
        ..inputs(Some(3), dep(3, 3, 3))
    };
    type Row = [(&'static str, &'static str); 4];
    let cases: Vec<(&str, Inputs<'static>, Row)> = vec![
        (
            "3, dep 3/3/3",
            inputs(Some(3), dep(3, 3, 3)),
            [
                (t, "Available"),
                (f, "ProgressingComplete"),
                (f, "NotDegraded"),
                (t, "MemcachedReady"),
            ],
        ),
        (
            "0, dep 0/0/0",
            inputs(Some(0), dep(0, 0, 0)),
            [
                (f, "Unavailable"),
                (f, "ProgressingComplete"),
                (f, "NotDegraded"),
                (f, "MemcachedNotReady"),
            ],
        ),
        (
            "absent, dep 1/1/1",
            inputs(None, dep(1, 1, 1)),
            [
                (t, "Available"),
                (f, "ProgressingComplete"),
                (f, "NotDegraded"),
                (t, "MemcachedReady"),
            ],
        ),
        (
            "3, dep 1/3/3",
            inputs(Some(3), dep(1, 3, 3)),
            [
                (t, "Available"),
                (f, "ProgressingComplete"),
                (t, "Degraded"),
                (f, "MemcachedNotReady"),
            ],
        ),
        (
            "3, dep 0/3/3",
            inputs(Some(3), dep(0, 3, 3)),
            [
                (f, "Unavailable"),
                (f, "ProgressingComplete"),
                (t, "Degraded"),
                (f, "MemcachedNotReady"),
            ],
        ),
        (
            "3, dep 3/1/3",
            inputs(Some(3), dep(3, 1, 3)),
            [
                (t, "Available"),
                (t, "Progressing"),
                (f, "NotDegraded"),
                (t, "MemcachedReady"),
            ],
        ),
        (
            "5, dep 3/3/3",
            inputs(Some(5), dep(3, 3, 3)),
            [
                (t, "Available"),
                (t, "Progressing"),
                (t, "Degraded"),
                (f, "MemcachedNotReady"),
            ],
        ),
        (
            "3, no dep",
            inputs(Some(3), None),
            [
                (f, "Unavailable"),
                (t, "Progressing"),
                (t, "Degraded"),
                (f, "MemcachedNotReady"),
            ],
        ),
        (
            "missing secret",
            missing,
            [
                (t, "Available"),
                (f, "ProgressingComplete"),
                (t, "SecretNotFound"),
                (t, "MemcachedReady"),
            ],
        ),
        (
            "HPA 2, dep 5/5/5",
            hpa(Some(2), dep(5, 5, 5)),
            [
                (t, "Available"),
                (f, "ProgressingComplete"),
                (f, "NotDegraded"),
                (t, "MemcachedReady"),
            ],
        ),
        (
            "HPA 2, dep 3/5/5",
            hpa(Some(2), dep(3, 5, 5)),
            [
                (t, "Available"),
                (f, "ProgressingComplete"),
                (t, "Degraded"),
                (f, "MemcachedNotReady"),
            ],
        ),
        (
            "HPA 2, no dep",
            hpa(Some(2), None),
            [
                (f, "Unavailable"),
                (t, "Progressing"),
                (t, "Degraded"),
                (f, "MemcachedNotReady"),
            ],
        ),
    ];
    for (name, i, want) in cases {
        assert_eq!(row(&i), r(&want), "{name}");
    }
}

#[test]
fn messages() {
    let msg = |i: &Inputs<'_>, t: &str| {
        get(&build(i, &[], NOW).conditions.expect("c"), t)
            .message
            .clone()
    };
    let i = inputs(Some(3), dep(1, 2, 3));
    assert_eq!(msg(&i, "Available"), "1/3 replicas are ready");
    assert_eq!(
        msg(&i, "Progressing"),
        "Rollout in progress: 2/3 replicas updated"
    );
    assert_eq!(msg(&i, "Degraded"), "Only 1/3 replicas are ready");
    assert_eq!(msg(&i, "Ready"), "1/3 replicas are ready");
    let done = inputs(Some(3), dep(3, 3, 3));
    assert_eq!(msg(&done, "Progressing"), "All 3 replicas are updated");
    assert_eq!(msg(&done, "Degraded"), "All 3 desired replicas are ready");
    assert_eq!(msg(&done, "Ready"), "All 3 replicas are ready");
    let none = inputs(Some(3), None);
    for t in ["Progressing", "Degraded", "Ready"] {
        assert_eq!(msg(&none, t), "Waiting for deployment to be created");
    }
    assert_eq!(
        msg(&inputs(Some(0), dep(0, 0, 0)), "Ready"),
        "Instance has zero desired replicas"
    );
    let hpa = Inputs {
        autoscaling: true,
        ..inputs(None, dep(5, 5, 5))
    };
    assert_eq!(
        msg(&hpa, "Available"),
        "5/5 replicas are ready (HPA-managed)"
    );
    let two = Inputs {
        missing_secrets: vec!["a".into(), "b".into()],
        ..done.clone()
    };
    assert_eq!(msg(&two, "Degraded"), "Referenced Secrets not found: a, b");
}

#[test]
fn other_status_fields() {
    let ready = build(&inputs(Some(3), dep(3, 3, 3)), &[], NOW);
    assert_eq!(ready.server_list, Some(vec!["cache.shop:11211".to_owned()]));
    assert_eq!(ready.ready_replicas, Some(3));
    assert_eq!(ready.observed_generation, Some(4));
    assert!(
        ready
            .conditions
            .expect("c")
            .iter()
            .all(|c| c.observed_generation == Some(4))
    );
    let scaling_down = build(&inputs(Some(2), dep(3, 3, 3)), &[], NOW);
    assert_eq!(
        scaling_down.server_list, None,
        "ready > desired is not Ready"
    );
    let zero = build(&inputs(Some(3), dep(0, 0, 3)), &[], NOW);
    assert_eq!(zero.ready_replicas, None, "0 is omitted");
    let json = serde_json::to_value(&zero).expect("json");
    assert!(json.get("readyReplicas").is_none() && json.get("serverList").is_none());
}

#[test]
fn fresh_conditions_come_in_the_reference_order() {
    let s = build(&inputs(Some(3), None), &[], NOW);
    let types: Vec<String> = s
        .conditions
        .expect("c")
        .into_iter()
        .map(|c| c.type_)
        .collect();
    assert_eq!(
        types,
        [
            "Available",
            "Progressing",
            "Degraded",
            "Ready",
            "ChildResourcesMissing"
        ]
    );
}

#[test]
fn last_transition_time_is_carried_over_until_the_status_flips() {
    let first = build(&inputs(Some(3), dep(3, 3, 3)), &[], "2026-11-22T10:00:00Z")
        .conditions
        .expect("c");
    assert!(
        first
            .iter()
            .all(|c| c.last_transition_time == "2026-11-22T10:00:00Z")
    );
    let mut previous = first.clone();
    previous.push(Condition {
        type_: "example.io/Backup".into(),
        status: "True".into(),
        reason: "Done".into(),
        message: "other tool".into(),
        last_transition_time: "2026-01-01T00:00:00Z".into(),
        observed_generation: None,
    });
    let later = build(
        &inputs(Some(3), dep(2, 3, 3)),
        &previous,
        "2026-11-22T11:00:00Z",
    )
    .conditions
    .expect("c");
    assert_eq!(
        get(&later, "Available").last_transition_time,
        "2026-11-22T10:00:00Z",
        "still True"
    );
    assert_eq!(
        get(&later, "Ready").last_transition_time,
        "2026-11-22T11:00:00Z",
        "flipped to False"
    );
    assert_eq!(
        get(&later, "Degraded").last_transition_time,
        "2026-11-22T11:00:00Z",
        "flipped to True"
    );
    assert_eq!(
        get(&later, "Degraded").message,
        "Only 2/3 replicas are ready",
        "message always rewritten"
    );
    assert_eq!(
        get(&later, "example.io/Backup"),
        previous.last().expect("foreign"),
        "foreign kept as is"
    );
    let again = build(
        &inputs(Some(3), dep(2, 3, 3)),
        &later,
        "2026-11-22T12:00:00Z",
    );
    assert_eq!(
        again.conditions.expect("c"),
        later,
        "unchanged inputs, unchanged status: no sync loop"
    );
}

/// The scale subresource's view: `status.replicas` in the unit of `spec.replicas`, and the
/// pod selector only where an external autoscaler would count right and be alone.
#[test]
fn scale_replicas_and_selector() {
    let selector = "app.kubernetes.io/instance=cache,app.kubernetes.io/managed-by=memcached-operator,\
                    app.kubernetes.io/name=memcached";
    let plain = build(
        &Inputs {
            ..inputs(Some(5), dep(2, 3, 3))
        },
        &[],
        NOW,
    );
    assert_eq!(
        (plain.replicas, plain.selector.as_deref()),
        (Some(3), Some(selector))
    );

    let zone = |name: &str| memcached_hook::api::ZoneStatus {
        name: name.to_owned(),
        ..Default::default()
    };
    let zoned = build(
        &Inputs {
            zones: vec![zone("a"), zone("b"), zone("c")],
            zone_replicas: 2,
            ..inputs(Some(6), dep(7, 7, 7))
        },
        &[],
        NOW,
    );
    assert_eq!(
        (zoned.replicas, zoned.selector),
        (Some(2), None),
        "7 pods in 3 zones"
    );

    let autoscaled = build(
        &Inputs {
            autoscaling: true,
            ..inputs(None, dep(4, 4, 4))
        },
        &[],
        NOW,
    );
    assert_eq!((autoscaled.replicas, autoscaled.selector), (Some(4), None));

    let none = build(
        &Inputs {
            ..inputs(Some(1), None)
        },
        &[],
        NOW,
    );
    assert_eq!(none.replicas, Some(0), "no workload observed: no pods");
}

#[test]
fn repeated_condition_types_are_answered_once_each() {
    let at = |type_: &str, status: &str, reason: &str, time: &str| Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: String::new(),
        last_transition_time: time.to_owned(),
        observed_generation: Some(3),
    };
    let earlier = "2026-11-01T00:00:00Z";
    let later = "2026-11-02T00:00:00Z";
    // (what the parent's status holds, whether the children are kept as they are)
    let cases = [
        // A managed type twice: one, its lastTransitionTime carried from the first.
        (
            vec![
                at("Ready", "True", "MemcachedReady", earlier),
                at("Ready", "False", "MemcachedNotReady", later),
            ],
            false,
        ),
        // Three times, apart.
        (
            vec![
                at("Ready", "True", "MemcachedReady", earlier),
                at("Available", "True", "Available", earlier),
                at("Ready", "True", "MemcachedReady", later),
                at("Ready", "False", "MemcachedNotReady", later),
            ],
            false,
        ),
        // A type the hook does not manage, twice: the first.
        (
            vec![
                at("example.com/Drained", "True", "Drained", earlier),
                at("example.com/Drained", "False", "NotDrained", later),
            ],
            false,
        ),
        // An invalid spec keeps the previous conditions: still one per type.
        (
            vec![
                at("Ready", "True", "MemcachedReady", earlier),
                at("Ready", "False", "MemcachedNotReady", later),
                at("example.com/Drained", "True", "Drained", earlier),
                at("example.com/Drained", "True", "Drained", later),
            ],
            true,
        ),
    ];
    for (previous, keep_previous) in cases {
        let i = Inputs {
            keep_previous,
            invalid_spec: keep_previous.then(|| "spec.replicas: Invalid value".to_owned()),
            ..inputs(Some(3), dep(3, 3, 3))
        };
        let conditions = build(&i, &previous, NOW).conditions.expect("conditions");
        let mut types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        let answered = types.len();
        types.sort_unstable();
        types.dedup();
        assert_eq!(types.len(), answered, "{previous:?}: {conditions:?}");
        for type_ in ["Ready", "example.com/Drained"] {
            let first = previous.iter().find(|c| c.type_ == type_);
            let kept = conditions.iter().find(|c| c.type_ == type_);
            if let (Some(first), Some(kept)) = (first, kept)
                && kept.status == first.status
            {
                assert_eq!(kept.last_transition_time, first.last_transition_time);
            }
        }
    }
}
