//! `spec.warmRestart`: what the StatefulSet gets, the rule that it needs a StatefulSet, the
//! replacement of a StatefulSet whose claim templates change (through a Deployment, as the
//! workload switch does), and the `WarmRestart` condition.

use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::{Value, json};

use memcached_hook::Options;

use crate::common::{condition, controller, sync_value, typed};
use crate::workload::answered_kinds;

pub(crate) fn request(spec: Value, children: Value) -> Value {
    let mut controller = controller();
    controller["spec"]["childResources"]
        .as_array_mut()
        .expect("list")
        .push(json!({"apiVersion": "apps/v1", "resource": "statefulsets"}));
    json!({
        "controller": controller,
        "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                   "metadata": {"name": "cache", "namespace": "shop", "generation": 2}, "spec": spec},
        "children": children,
        "related": {}
    })
}

pub(crate) fn warm_spec(extra: Value) -> Value {
    let mut spec = json!({"workload": "StatefulSet", "replicas": 3,
                          "warmRestart": {"enabled": true}});
    for (k, v) in extra.as_object().expect("object") {
        spec[k] = v.clone();
    }
    spec
}

/// An observed workload, settled with `replicas` ready pods, with `claims` and memcached `args`.
pub(crate) fn observed(kind: &str, replicas: i64, claims: Value, args: &[&str]) -> Value {
    json!({"apiVersion": "apps/v1", "kind": kind,
           "metadata": {"name": "cache", "namespace": "shop", "generation": 1},
           "spec": {"replicas": replicas, "volumeClaimTemplates": claims,
                    "template": {"spec": {"containers": [{"name": "memcached", "args": args}]}}},
           "status": {"observedGeneration": 1, "replicas": replicas, "readyReplicas": replicas,
                      "updatedReplicas": replicas, "currentRevision": "r1", "updateRevision": "r1"}})
}

pub(crate) fn warm_claim(size: &str) -> Value {
    json!([{"metadata": {"name": "warm-restart"},
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                     "resources": {"requests": {"storage": size}}},
            "status": {"phase": "Pending"}}])
}

#[test]
fn the_statefulset_gets_a_volume_the_guard_and_a_graceful_stop() {
    let response = sync_value(&request(warm_spec(json!({})), json!({})));
    let spec = typed::<StatefulSet>(&response).spec.expect("spec");
    let claims = spec.volume_claim_templates.expect("claim templates");
    assert_eq!(claims.len(), 1);
    let claim = claims[0].spec.as_ref().expect("claim spec");
    let size = &claim
        .resources
        .as_ref()
        .expect("resources")
        .requests
        .as_ref()
        .expect("requests")["storage"];
    assert_eq!(size.0, "132Mi", "64 MiB of items + 4 + 64");
    let policy = spec
        .persistent_volume_claim_retention_policy
        .expect("policy");
    assert_eq!(
        (
            policy.when_deleted.as_deref(),
            policy.when_scaled.as_deref()
        ),
        (Some("Delete"), Some("Delete"))
    );
    let pod = spec.template.spec.expect("pod");
    let memcached = &pod.containers[0];
    let args = memcached.args.as_ref().expect("args");
    assert_eq!(args[args.len() - 2..], ["-e", "/warm-restart/memory"]);
    let guard = &pod.init_containers.as_ref().expect("init containers")[0];
    assert_eq!(guard.name, "warm-restart-guard");
    let guard_args = guard.args.as_ref().expect("guard args");
    assert_eq!(
        guard_args[..5],
        [
            "warm-guard",
            "--file",
            "/warm-restart/memory",
            "--max-stale-seconds",
            "300"
        ]
    );
    let tail = guard_args.iter().position(|a| a == "--").expect("--");
    assert_eq!(
        &guard_args[tail + 1..],
        &args[..],
        "the guard checks memcached's own arguments"
    );
    assert_eq!(
        guard
            .security_context
            .as_ref()
            .and_then(|c| c.read_only_root_filesystem),
        Some(true),
        "the guard writes only to its volumes"
    );
    let stop = memcached
        .lifecycle
        .as_ref()
        .and_then(|l| l.pre_stop.as_ref())
        .and_then(|p| p.exec.as_ref());
    assert_eq!(
        stop.and_then(|e| e.command.as_deref()).expect("preStop"),
        [
            "/warm-restart-bin/memcached-hook",
            "warm-stop",
            "--file",
            "/warm-restart/memory",
            "--delay-seconds",
            "0"
        ]
    );
    assert_eq!(pod.termination_grace_period_seconds, Some(31));
    assert_eq!(pod.security_context.and_then(|c| c.fs_group), Some(11211));
    let c = condition(&response, "WarmRestart");
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "Enabled"));
}

#[test]
fn the_grace_period_covers_the_graceful_shutdown_delay_and_the_size() {
    let spec = warm_spec(json!({"memcached": {"maxMemoryMB": 4096},
        "highAvailability": {"gracefulShutdown": {"enabled": true, "preStopDelaySeconds": 10,
                                                  "terminationGracePeriodSeconds": 20}}}));
    let response = sync_value(&request(spec, json!({})));
    let pod = typed::<StatefulSet>(&response)
        .spec
        .expect("spec")
        .template
        .spec
        .expect("pod");
    assert_eq!(pod.termination_grace_period_seconds, Some(10 + 30 + 4));
    let command = pod.containers[0]
        .lifecycle
        .clone()
        .and_then(|l| l.pre_stop)
        .and_then(|p| p.exec)
        .and_then(|e| e.command)
        .expect("preStop");
    assert_eq!(command.last().map(String::as_str), Some("10"));
}

#[test]
fn warm_restart_needs_a_statefulset() {
    let spec: memcached_hook::api::MemcachedSpec = serde_json::from_value(
        json!({"warmRestart": {"enabled": true, "size": "-1Gi", "maxStaleSeconds": 0}}),
    )
    .expect("spec");
    let shown: Vec<String> = memcached_hook::api::validation::validate("cache", &spec)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        shown,
        [
            "spec.warmRestart.maxStaleSeconds: Invalid value: 0: should be greater than or equal to 1",
            "spec.warmRestart.size: Invalid value: \"-1Gi\": must be greater than 0",
            "spec.warmRestart.enabled: Invalid value: true: warmRestart.enabled needs workload \
             StatefulSet: only a StatefulSet gives each pod a volume that outlives it",
        ]
    );
}

#[test]
fn warm_restart_refuses_extstore() {
    let spec: memcached_hook::api::MemcachedSpec = serde_json::from_value(warm_spec(
        json!({"memcached": {"extraArgs": ["-o", "ext_path=/data/ext:1G,ext_wbuf_size=8"]}}),
    ))
    .expect("spec");
    let shown: Vec<String> = memcached_hook::api::validation::validate("cache", &spec)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].starts_with("spec.memcached.extraArgs[1]: Invalid value: \"ext_path=/data/ext:1G"),
        "{shown:?}"
    );
}

#[test]
fn the_default_volume_of_exactly_a_gibibyte_is_written_as_the_api_server_stores_it() {
    // 903 + ceil(903 / 16) + 64 = 1024 MiB.
    let spec: memcached_hook::api::MemcachedSpec =
        serde_json::from_value(warm_spec(json!({"memcached": {"maxMemoryMB": 903}})))
            .expect("spec");
    let e = memcached_hook::api::effective::Effective::of(&spec);
    assert_eq!(e.warm_restart.expect("on").size, "1Gi");
}

#[test]
fn warm_restart_refuses_extstore_in_every_spelling() {
    for (args, at) in [
        (json!(["-vvoext_path=/d/e:1g"]), 0),
        (json!(["-v", "-o", "ext_path=/d/e:1g"]), 2),
        (json!(["--extended", "no_lru_crawler,ext_path=/d/e:1g"]), 1),
        (json!(["--extended=ext_path=/d/e:1g"]), 0),
    ] {
        let shown = crate::extstore::refused(warm_spec(json!({"memcached": {"extraArgs": args}})));
        assert_eq!(shown.len(), 1, "{shown:?}");
        let want = format!("spec.memcached.extraArgs[{at}]: Invalid value: ");
        assert!(
            shown[0].starts_with(&want) && shown[0].contains("never restores"),
            "{shown:?}"
        );
    }
    // An operand that only looks like the option is not read by memcached.
    let operand = warm_spec(json!({"memcached": {"extraArgs": ["-v", "ext_path=/d/e:1g"]}}));
    assert_eq!(crate::extstore::refused(operand), Vec::<String>::new());
}

#[test]
fn an_invalid_warm_restart_keeps_the_observed_statefulset() {
    let mut spec = warm_spec(json!({}));
    spec["warmRestart"]["size"] = json!("lots");
    let sts = observed("StatefulSet", 3, warm_claim("132Mi"), &["-m", "64"]);
    let mut sts_applied = sts.clone();
    sts_applied["metadata"]["annotations"] = json!({
        "metacontroller.k8s.io/last-applied-configuration":
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "cache"},
                   "spec": {"replicas": 3}}).to_string()});
    let response = sync_value(&request(
        spec,
        json!({"StatefulSet.apps/v1": {"cache": sts_applied}}),
    ));
    assert_eq!(answered_kinds(&response), ["StatefulSet"]);
    assert_eq!(
        response["children"][0]["spec"],
        json!({"replicas": 3}),
        "kept as last applied"
    );
    let degraded = condition(&response, "Degraded");
    assert_eq!(degraded.reason, "InvalidSpec");
    assert!(
        degraded.message.contains("spec.warmRestart.size"),
        "{degraded:?}"
    );
    let ready = condition(&response, "Ready");
    assert_eq!(ready.status, "True", "judged against the kept StatefulSet");
}

#[test]
fn a_new_claim_template_replaces_the_statefulset_through_a_deployment() {
    let spec = warm_spec(json!({}));
    // 1. A StatefulSet without volumes: a Deployment takes over, the StatefulSet is kept.
    let plain = observed("StatefulSet", 3, json!(null), &["-m", "64"]);
    let r = sync_value(&request(
        spec.clone(),
        json!({"StatefulSet.apps/v1": {"cache": plain}}),
    ));
    assert_eq!(answered_kinds(&r), ["Deployment", "StatefulSet"]);
    let c = condition(&r, "WarmRestart");
    assert_eq!(c.reason, "VolumeChange");
    // 2. The Deployment is ready: the StatefulSet is left out (deleted).
    let plain = observed("StatefulSet", 3, json!(null), &["-m", "64"]);
    let dep = observed("Deployment", 3, json!(null), &["-m", "64"]);
    let r = sync_value(&request(
        spec.clone(),
        json!({"StatefulSet.apps/v1": {"cache": plain}, "Deployment.apps/v1": {"cache": dep}}),
    ));
    assert_eq!(answered_kinds(&r), ["Deployment"]);
    // 3. Only the Deployment: the StatefulSet with its volume, the Deployment kept meanwhile.
    let dep = observed("Deployment", 3, json!(null), &["-m", "64"]);
    let r = sync_value(&request(
        spec.clone(),
        json!({"Deployment.apps/v1": {"cache": dep}}),
    ));
    assert_eq!(answered_kinds(&r), ["Deployment", "StatefulSet"]);
    assert!(
        typed::<StatefulSet>(&r)
            .spec
            .expect("spec")
            .volume_claim_templates
            .is_some()
    );
    // The same claim as stored (the API server's defaults added): nothing to replace.
    let warm = observed("StatefulSet", 3, warm_claim("132Mi"), &["-m", "64"]);
    let r = sync_value(&request(
        spec.clone(),
        json!({"StatefulSet.apps/v1": {"cache": warm}}),
    ));
    assert_eq!(answered_kinds(&r), ["StatefulSet"]);
    // Another size, or warm restart turned off: replaced again.
    for (spec, claim) in [
        (spec.clone(), warm_claim("1Gi")),
        (
            json!({"workload": "StatefulSet", "replicas": 3}),
            warm_claim("132Mi"),
        ),
    ] {
        let sts = observed("StatefulSet", 3, claim, &["-m", "64"]);
        let r = sync_value(&request(
            spec,
            json!({"StatefulSet.apps/v1": {"cache": sts}}),
        ));
        assert_eq!(answered_kinds(&r), ["Deployment", "StatefulSet"]);
    }
}

#[test]
fn a_layout_change_is_announced_before_the_rollout() {
    let args: Vec<&str> = "-m 64 -c 1024 -t 4 -I 1m -X -W -e /warm-restart/memory"
        .split(' ')
        .collect();
    let children = || json!({"StatefulSet.apps/v1": {"cache": observed("StatefulSet", 3, warm_claim("132Mi"), &args)}});
    let same = sync_value(&request(
        warm_spec(json!({"memcached": {"threads": 8}})),
        children(),
    ));
    assert_eq!(
        condition(&same, "WarmRestart").reason,
        "Enabled",
        "threads keep the layout"
    );
    let spec = warm_spec(json!({"memcached": {"maxItemSize": "2m"},
                                "warmRestart": {"enabled": true, "size": "132Mi"}}));
    let changed = sync_value(&request(spec, children()));
    let c = condition(&changed, "WarmRestart");
    assert_eq!(c.reason, "LayoutChange");
    assert!(c.message.ends_with("this changes -I 1m -> 2m"), "{c:?}");
}

/// A related pod of `cache` whose guard ended with `result` (`None`: still initialising).
fn related_pod(name: &str, result: Option<&str>) -> Value {
    let state = match result {
        Some(message) => {
            json!({"terminated": {"exitCode": 0, "reason": "Completed", "message": message}})
        }
        None => json!({"running": {"startedAt": "2026-11-26T05:00:00Z"}}),
    };
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "shop",
                        "labels": {"app.kubernetes.io/instance": "cache"}},
           "spec": {"containers": [{"name": "memcached", "image": "memcached:1.6"}]},
           "status": {"phase": "Running",
                      "initContainerStatuses": [{"name": "warm-restart-guard", "ready": false,
                                                 "restartCount": 0, "state": state}]}})
}

#[test]
fn customize_asks_for_the_pods_with_relate_pods_and_warm_restart_on_a_statefulset() {
    let relate = Options {
        relate_pods: true,
        ..Options::default()
    };
    let answer = |spec: Value, options: &Options| {
        let parent = request(spec, json!({}))["parent"].clone();
        let req = serde_json::from_value(json!({"controller": {}, "parent": parent}))
            .expect("customize request");
        serde_json::to_value(memcached_hook::customize(&req, options).expect("answer"))
            .expect("json")
    };
    let customize = |spec: Value| answer(spec, &relate);
    // Off by default: Metacontroller would watch every pod of the cluster.
    assert_eq!(
        answer(warm_spec(json!({})), &Options::default()),
        json!({"relatedResources": []})
    );
    assert_eq!(
        customize(warm_spec(json!({}))),
        json!({"relatedResources": [{"apiVersion": "v1", "resource": "pods", "namespace": "shop",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "cache",
                "app.kubernetes.io/managed-by": "memcached-operator",
                "app.kubernetes.io/name": "memcached"}}}]})
    );
    let off = customize(json!({"workload": "StatefulSet", "replicas": 3}));
    assert_eq!(off, json!({"relatedResources": []}));
}

#[test]
fn the_condition_says_which_pods_restored_their_items() {
    let args: Vec<&str> = "-m 64 -c 1024 -t 4 -I 1m -X -W -e /warm-restart/memory"
        .split(' ')
        .collect();
    let mut req = request(
        warm_spec(json!({})),
        json!({"StatefulSet.apps/v1": {"cache": observed("StatefulSet", 3, warm_claim("132Mi"), &args)}}),
    );
    req["related"] = json!({"Pod.v1": {
        "cache-1": related_pod("cache-1", Some("cold: items saved 400 s ago, more than 300\n")),
        "cache-0": related_pod("cache-0", Some("restore: items saved 2 s ago\n")),
        "cache-2": related_pod("cache-2", None)}});
    let c = condition(&sync_value(&req), "WarmRestart");
    assert_eq!(c.reason, "Enabled", "{c:?}");
    let message = c.message;
    assert!(
        message.ends_with(
            "1 of 3 pods restored their items at their last start (cache-0); started empty \
             (cache-1: items saved 400 s ago, more than 300); not started yet (cache-2)"
        ),
        "{message}"
    );
    // Without pods (no customize hook, or none created yet) it says where to look.
    req["related"] = json!({});
    let c = condition(&sync_value(&req), "WarmRestart");
    assert!(
        c.message
            .ends_with("termination message of its warm-restart-guard init container"),
        "{c:?}"
    );
}
