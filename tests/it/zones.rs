//! `spec.zones` through `sync`: each zone's workload and budget, and the budgets over a run of
//! syncs whose observed children are the previous answers (docs/behaviour.md, "Zones").

use serde_json::{Value, json};

use crate::common::{Observed, condition, next_request, status, sync_value};

const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

fn spec() -> Value {
    json!({
        "replicas": 2,
        "zones": {"names": ZONES},
        "highAvailability": {"podDisruptionBudget": {"enabled": true, "maxUnavailable": 1}}
    })
}

/// A request whose observed children are `previous` (an answer's children), each zone's workload
/// with `ready[zone]` ready pods of 2.
fn request(previous: &[Value], ready: [i32; 3]) -> Value {
    request_with(spec(), previous, ready)
}

/// [`request`] for the Memcached with `spec`, under a CompositeController that also declares
/// StatefulSets.
fn request_with(spec: Value, previous: &[Value], ready: [i32; 3]) -> Value {
    request_by(spec, previous, |name| {
        ZONES
            .iter()
            .position(|z| name.ends_with(z))
            .map_or(2, |z| ready[z])
    })
}

/// [`request_with`], each workload named `name` with `ready(name)` ready pods of 2.
fn request_by(spec: Value, previous: &[Value], ready: impl Fn(&str) -> i32) -> Value {
    let mut controller = crate::common::controller();
    controller["spec"]["childResources"]
        .as_array_mut()
        .unwrap()
        .push(json!({"apiVersion": "apps/v1", "resource": "statefulsets"}));
    let first = json!({
        "controller": controller,
        "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                   "metadata": {"name": "cache", "namespace": "shop", "generation": 1}, "spec": spec},
        "children": {"Deployment.apps/v1": {}, "StatefulSet.apps/v1": {}, "Service.v1": {},
                     "PodDisruptionBudget.policy/v1": {}},
        "related": {}
    });
    let status = |child: &Value| {
        let n = ready(child["metadata"]["name"].as_str().expect("named"));
        match child["kind"].as_str() {
            Some("Deployment" | "StatefulSet") => json!({"status": {"observedGeneration": 1,
                "replicas": 2, "updatedReplicas": 2, "readyReplicas": n}}),
            Some("PodDisruptionBudget") => {
                json!({"status": {"currentHealthy": n, "expectedPods": 2}})
            }
            _ => json!({}),
        }
    };
    next_request(
        &first,
        &json!({"children": previous}),
        Observed::With(&status),
    )
}

/// `req` with the status of the previous `answer` as its parent's, as Metacontroller sends it.
fn after(mut req: Value, answer: &Value) -> Value {
    req["parent"]["status"] = answer["status"].clone();
    req
}

/// The answer once a Memcached created with every zone ready has settled: every budget open.
fn settled() -> Value {
    let mut answer = sync_value(&request(&[], [2, 2, 2]));
    for _ in 0..3 {
        answer = sync_value(&after(request(&children(&answer), [2, 2, 2]), &answer));
    }
    assert_eq!(condition(&answer, "ZoneDisruption").reason, "AllZonesWhole");
    answer
}

fn children(answer: &Value) -> Vec<Value> {
    answer["children"].as_array().expect("children").clone()
}

/// Each zone's budget in `answer`: `o` (the user's, maxUnavailable 1) or `c` (maxUnavailable 0).
fn budgets(answer: &Value) -> String {
    ZONES
        .iter()
        .map(|zone| {
            let name = format!("cache-{zone}");
            let pdb = children(answer)
                .into_iter()
                .find(|c| c["kind"] == "PodDisruptionBudget" && c["metadata"]["name"] == name)
                .expect("a budget per zone");
            match pdb["spec"]["maxUnavailable"].as_i64() {
                Some(0) => "c",
                Some(1) => "o",
                other => panic!("{name}: {other:?}"),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn zones_each_get_a_workload_selecting_only_their_pods_pinned_to_the_zone() {
    let answer = sync_value(&request(&[], [0, 0, 0]));
    let workloads: Vec<Value> = children(&answer)
        .into_iter()
        .filter(|c| c["kind"] == "Deployment")
        .collect();
    assert_eq!(workloads.len(), 3);
    for (w, zone) in workloads.iter().zip(ZONES) {
        assert_eq!(w["metadata"]["name"], format!("cache-{zone}"));
        assert_eq!(w["spec"]["replicas"], 2, "replicas are per zone");
        let selector = w["spec"]["selector"]["matchLabels"].as_object().unwrap();
        assert_eq!(selector["memcached.c5c3.io/zone"], zone);
        for other in &workloads {
            let labels = other["spec"]["template"]["metadata"]["labels"]
                .as_object()
                .unwrap();
            let selects = selector.iter().all(|(k, v)| labels.get(k) == Some(v));
            assert_eq!(selects, other["metadata"]["name"] == w["metadata"]["name"]);
        }
        let terms = &w["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"];
        assert_eq!(
            terms,
            &json!([{"matchExpressions": [{"key": "topology.kubernetes.io/zone",
                                           "operator": "In", "values": [zone]}]}])
        );
    }
    let s = status(&answer);
    assert_eq!(s.desired_replicas, Some(6));
    assert_eq!(s.zones_ready.as_deref(), Some("0/3"));
}

#[test]
fn a_drain_of_one_zone_over_syncs_never_opens_two_zones() {
    // Each step: the zones' ready pods, then the budgets the answer must hold.
    let steps = [
        ([0, 0, 0], "c c c", "ZonesStarting"), // created: every zone short
        ([2, 0, 2], "c c c", "ZonesStarting"), // one zone still starting: no zone is disrupted
        ([2, 2, 2], "o o o", "AllZonesWhole"), // every zone whole once: every budget opens at once
        ([2, 2, 2], "o o o", "AllZonesWhole"), // every zone ready
        ([2, 1, 2], "c o c", "ZoneDisrupted"), // a drain takes a pod of zone-b
        ([2, 1, 2], "c o c", "ZoneDisrupted"),
        ([2, 2, 2], "c c c", "Settling"), // zone-b whole again: all block first
        ([2, 2, 1], "c c o", "ZoneDisrupted"), // zone-c drained while all block: it may go on
        ([2, 2, 2], "c c c", "Settling"),
        ([2, 2, 2], "o o o", "AllZonesWhole"), // a later sync reopens every budget
        ([1, 2, 2], "o c c", "ZoneDisrupted"),
        ([1, 1, 2], "c c c", "ZoneOutage"), // a second zone short: every budget blocks
        ([2, 1, 2], "c o c", "ZoneDisrupted"), // every budget blocked: zone-b may go on
        ([2, 1, 2], "c o c", "ZoneDisrupted"),
    ];
    let mut previous = Vec::new();
    let mut last = json!({});
    for (i, (ready, want, reason)) in steps.into_iter().enumerate() {
        let answer = sync_value(&after(request(&previous, ready), &last));
        assert_eq!(budgets(&answer), want, "step {i}: {ready:?}");
        assert_eq!(
            condition(&answer, "ZoneDisruption").reason,
            reason,
            "step {i}"
        );
        let allowed: Vec<bool> = status(&answer)
            .zones
            .unwrap()
            .iter()
            .map(|z| z.disruption_allowed == Some(true))
            .collect();
        let open: Vec<bool> = want.split(' ').map(|b| b == "o").collect();
        assert_eq!(allowed, open, "step {i}");
        previous = children(&answer);
        last = answer;
    }
}

#[test]
fn a_drain_moving_to_another_zone_waits_for_every_budget_to_block() {
    let whole = settled();
    let b_drained = sync_value(&after(request(&children(&whole), [2, 1, 2]), &whole));
    assert_eq!(budgets(&b_drained), "c o c");
    // zone-b is back while zone-a is drained: zone-a's budget does not open in this sync.
    let moving = sync_value(&after(
        request(&children(&b_drained), [1, 2, 2]),
        &b_drained,
    ));
    assert_eq!(budgets(&moving), "c c c");
    assert_eq!(condition(&moving, "ZoneDisruption").reason, "HandingOver");
    let next = sync_value(&after(request(&children(&moving), [1, 2, 2]), &moving));
    assert_eq!(budgets(&next), "o c c");
}

#[test]
fn a_switch_to_statefulsets_keeps_each_zones_deployment_until_that_zones_statefulset_is_ready() {
    let deployments = sync_value(&request(&[], [2, 2, 2]));
    let mut sts = spec();
    sts["workload"] = json!("StatefulSet");
    let started = sync_value(&request_with(
        sts.clone(),
        &children(&deployments),
        [2, 2, 2],
    ));
    assert_eq!(
        workloads(&started),
        [
            "Deployment cache-zone-a",
            "Deployment cache-zone-b",
            "Deployment cache-zone-c",
            "StatefulSet cache-zone-a",
            "StatefulSet cache-zone-b",
            "StatefulSet cache-zone-c",
        ]
    );
    assert_eq!(
        condition(&started, "Progressing").reason,
        "WorkloadMigration"
    );
    // Observed again with zone-b's StatefulSet one pod short: only zone-b keeps its Deployment.
    let observe = |ready| {
        let mut observed = request_with(sts.clone(), &children(&started), ready);
        for (_, obj) in observed["children"]["StatefulSet.apps/v1"]
            .as_object_mut()
            .unwrap()
        {
            obj["status"]["currentRevision"] = json!("r1");
            obj["status"]["updateRevision"] = json!("r1");
        }
        sync_value(&observed)
    };
    assert_eq!(
        workloads(&observe([2, 1, 2])),
        [
            "Deployment cache-zone-b",
            "StatefulSet cache-zone-a",
            "StatefulSet cache-zone-b",
            "StatefulSet cache-zone-c",
        ]
    );
    let done = observe([2, 2, 2]);
    assert_eq!(
        workloads(&done),
        [
            "StatefulSet cache-zone-a",
            "StatefulSet cache-zone-b",
            "StatefulSet cache-zone-c",
        ]
    );
    let list = status(&done).server_list.unwrap();
    assert_eq!(list.len(), 6);
    assert_eq!(list[0], "cache-zone-a-0.cache.shop.svc:11211");
}

/// The workloads of `answer`, as `Kind name`.
fn workloads(answer: &Value) -> Vec<String> {
    children(answer)
        .iter()
        .filter(|c| c["kind"] == "Deployment" || c["kind"] == "StatefulSet")
        .map(|c| {
            format!(
                "{} {}",
                c["kind"].as_str().unwrap(),
                c["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

/// The spec without `spec.zones`.
fn unzoned() -> Value {
    let mut plain = spec();
    plain.as_object_mut().unwrap().remove("zones");
    plain
}

/// The child `kind` named `name` among `children`, if any.
fn named<'a>(children: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    children
        .iter()
        .find(|c| c["kind"] == kind && c["metadata"]["name"] == name)
}

/// `answer` keeps the workload and budget `name` of `previous` exactly as answered before, and
/// says why.
fn keeps_serving(answer: &Value, previous: &[Value], name: &str, says: &str) {
    let now = children(answer);
    for kind in ["Deployment", "PodDisruptionBudget"] {
        assert_eq!(
            named(&now, kind, name),
            named(previous, kind, name),
            "{kind} {name} kept as observed"
        );
        assert!(named(&now, kind, name).is_some(), "{kind} {name} kept");
    }
    let progressing = condition(answer, "Progressing");
    assert_eq!(progressing.reason, "ZoneSwitch");
    assert!(
        progressing.message.contains(says),
        "{}",
        progressing.message
    );
    assert_ne!(condition(answer, "Degraded").reason, "InvalidSpec");
    let status = status(answer);
    assert!(status.ready_replicas.unwrap_or(0) > 0, "the old pods serve");
    assert!(
        !status.server_list.unwrap_or_default().is_empty(),
        "serverList names who serves"
    );
}

/// `answer` has left the workload and budget `name` out.
fn dropped(answer: &Value, name: &str) {
    let now = children(answer);
    for kind in ["Deployment", "PodDisruptionBudget"] {
        assert!(named(&now, kind, name).is_none(), "{kind} {name} left out");
    }
    assert_ne!(condition(answer, "Progressing").reason, "ZoneSwitch");
}

#[test]
fn turning_zones_on_keeps_the_unzoned_deployment_until_every_zone_is_ready() {
    let running = children(&sync_value(&request_with(unzoned(), &[], [2, 2, 2])));
    assert_eq!(
        workloads(&json!({"children": running})),
        ["Deployment cache"]
    );
    let first = request(&running, [2, 2, 2]);
    let answer = sync_value(&first);
    assert_eq!(
        answer,
        sync_value(&first),
        "the same request, the same answer"
    );
    keeps_serving(&answer, &running, "cache", "Switching to zones");
    assert_eq!(
        workloads(&answer),
        [
            "Deployment cache-zone-a",
            "Deployment cache-zone-b",
            "Deployment cache-zone-c",
            "Deployment cache",
        ]
    );
    assert_eq!(status(&answer).ready_replicas, Some(2));
    // The zones come up one by one; the Deployment `cache` serves until the last is ready.
    let mut previous = children(&answer);
    for ready in [[0, 0, 0], [2, 0, 0], [2, 2, 1]] {
        let answer = sync_value(&request(&previous, ready));
        keeps_serving(&answer, &running, "cache", "Switching to zones");
        previous = children(&answer);
    }
    let done = sync_value(&request(&previous, [2, 2, 2]));
    dropped(&done, "cache");
    assert_eq!(
        workloads(&done),
        [
            "Deployment cache-zone-a",
            "Deployment cache-zone-b",
            "Deployment cache-zone-c",
        ]
    );
    assert_eq!(status(&done).ready_replicas, Some(6));
}

#[test]
fn turning_zones_off_keeps_the_zone_workloads_until_the_unzoned_one_is_ready() {
    let running = children(&sync_value(&request(&[], [2, 2, 2])));
    let first = request_with(unzoned(), &running, [2, 2, 2]);
    let answer = sync_value(&first);
    assert_eq!(
        answer,
        sync_value(&first),
        "the same request, the same answer"
    );
    for zone in ZONES {
        keeps_serving(
            &answer,
            &running,
            &format!("cache-{zone}"),
            "Switching off zones",
        );
    }
    assert_eq!(status(&answer).ready_replicas, Some(6));
    let mut previous = children(&answer);
    for ready in [0, 1] {
        let answer = sync_value(&request_by(unzoned(), &previous, |name| {
            if name == "cache" { ready } else { 2 }
        }));
        for zone in ZONES {
            keeps_serving(
                &answer,
                &running,
                &format!("cache-{zone}"),
                "Switching off zones",
            );
        }
        previous = children(&answer);
    }
    let done = sync_value(&request_by(unzoned(), &previous, |_| 2));
    for zone in ZONES {
        dropped(&done, &format!("cache-{zone}"));
    }
    assert_eq!(workloads(&done), ["Deployment cache"]);
    assert!(named(&children(&done), "PodDisruptionBudget", "cache").is_some());
}

#[test]
fn removing_a_zone_drops_it_once_the_other_zones_are_ready() {
    let running = children(&sync_value(&request(&[], [2, 2, 2])));
    let mut fewer = spec();
    fewer["zones"]["names"] = json!(["zone-a", "zone-b"]);
    let waiting = sync_value(&request_with(fewer.clone(), &running, [1, 2, 2]));
    keeps_serving(&waiting, &running, "cache-zone-c", "Changing zones");
    let answer = sync_value(&request_with(fewer, &running, [2, 2, 2]));
    dropped(&answer, "cache-zone-c");
    assert_eq!(
        workloads(&answer),
        ["Deployment cache-zone-a", "Deployment cache-zone-b"]
    );
}

#[test]
fn renaming_a_zone_keeps_the_old_zone_until_the_new_one_is_ready() {
    let running = children(&sync_value(&request(&[], [2, 2, 2])));
    let mut renamed = spec();
    renamed["zones"]["names"] = json!(["zone-a", "zone-b", "zone-d"]);
    let first = request_with(renamed.clone(), &running, [2, 2, 2]);
    let answer = sync_value(&first);
    assert_eq!(
        answer,
        sync_value(&first),
        "the same request, the same answer"
    );
    keeps_serving(&answer, &running, "cache-zone-c", "Changing zones");
    assert_eq!(
        workloads(&answer),
        [
            "Deployment cache-zone-a",
            "Deployment cache-zone-b",
            "Deployment cache-zone-d",
            "Deployment cache-zone-c",
        ]
    );
    let ready = |d| move |name: &str| if name == "cache-zone-d" { d } else { 2 };
    let rising = sync_value(&request_by(renamed.clone(), &children(&answer), ready(1)));
    keeps_serving(&rising, &running, "cache-zone-c", "Changing zones");
    let done = sync_value(&request_by(renamed, &children(&rising), ready(2)));
    dropped(&done, "cache-zone-c");
    assert_eq!(
        workloads(&done),
        [
            "Deployment cache-zone-a",
            "Deployment cache-zone-b",
            "Deployment cache-zone-d",
        ]
    );
}

#[test]
fn adding_a_zone_to_a_zoned_cache_adds_its_workload() {
    let mut two = spec();
    two["zones"]["names"] = json!(["zone-a", "zone-b"]);
    let running = children(&sync_value(&request_with(two, &[], [2, 2, 2])));
    let answer = sync_value(&request(&running, [2, 2, 2]));
    assert_eq!(
        workloads(&answer),
        [
            "Deployment cache-zone-a",
            "Deployment cache-zone-b",
            "Deployment cache-zone-c",
        ]
    );
    let degraded = condition(&answer, "Degraded");
    assert_ne!(degraded.reason, "InvalidSpec");
}

/// The memcached image of the zone `zone`'s Deployment among `children`.
fn zone_image(children: &[Value], zone: &str) -> String {
    let name = format!("cache-{zone}");
    let workload = children
        .iter()
        .find(|c| c["kind"] == "Deployment" && c["metadata"]["name"] == name)
        .expect("a workload per zone");
    let containers = workload["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    let memcached = containers
        .iter()
        .find(|c| c["name"] == "memcached")
        .expect("memcached");
    memcached["image"].as_str().expect("image").to_owned()
}

/// A new image over a run of syncs, each observing the previous answer, a zone given the new
/// template rolling for two syncs before all its pods are updated and ready: the zones take it
/// one at a time, in `names` order, and no sync ever has two zones rolling.
#[test]
fn an_image_change_rolls_out_one_zone_at_a_time_in_names_order() {
    let mut previous = children(&sync_value(&request(&[], [0, 0, 0])));
    let mut new_spec = spec();
    new_spec["image"] = json!("memcached:1.6.39");
    let mut rolling = [0u8; 3];
    let mut order = Vec::new();
    for sync in 0..16 {
        let mut req = request_with(new_spec.clone(), &previous, [2, 2, 2]);
        for (zone, left) in ZONES.iter().zip(rolling) {
            if left > 0 {
                let w = &mut req["children"]["Deployment.apps/v1"][format!("cache-{zone}")];
                w["status"]["updatedReplicas"] = json!(1);
                w["status"]["readyReplicas"] = json!(1);
            }
        }
        let answer = sync_value(&req);
        let progressing = condition(&answer, "Progressing");
        let now = children(&answer);
        for left in &mut rolling {
            *left = left.saturating_sub(1);
        }
        for (i, zone) in ZONES.iter().enumerate() {
            if zone_image(&previous, zone) != zone_image(&now, zone) {
                order.push(*zone);
                rolling[i] = 2;
            }
        }
        let open = rolling.iter().filter(|left| **left > 0).count();
        assert!(open <= 1, "sync {sync}: {open} zones rolling");
        let done = ZONES
            .iter()
            .all(|z| zone_image(&now, z) == "memcached:1.6.39");
        if !done {
            assert_eq!(
                progressing.status, "True",
                "sync {sync}: {:?}",
                progressing.message
            );
        }
        previous = now;
    }
    assert_eq!(order, ZONES);
    for zone in ZONES {
        assert_eq!(zone_image(&previous, zone), "memcached:1.6.39");
    }
}

/// A zone held back is answered with the template it runs, and the hook restarted with the same
/// observed children gives the same answer: the rollout lives in the cluster, not in the hook.
#[test]
fn a_held_zone_keeps_its_template_and_a_restarted_hook_answers_the_same() {
    let old = children(&sync_value(&request(&[], [0, 0, 0])));
    let mut new_spec = spec();
    new_spec["image"] = json!("memcached:1.6.39");
    let req = request_with(new_spec, &old, [2, 2, 2]);
    let answer = sync_value(&req);
    let now = children(&answer);
    assert_eq!(zone_image(&now, "zone-a"), "memcached:1.6.39");
    for zone in ["zone-b", "zone-c"] {
        let name = format!("cache-{zone}");
        let find = |list: &[Value]| {
            list.iter()
                .find(|c| c["kind"] == "Deployment" && c["metadata"]["name"] == name)
                .expect("workload")["spec"]["template"]
                .clone()
        };
        assert_eq!(find(&now), find(&old), "{zone} keeps its template");
    }
    assert_eq!(sync_value(&req), answer);
}

/// Without the last-applied annotation (another apply method), a held zone's template is read
/// from the workload as observed, and a workload without the template hash counts as not
/// carrying the desired template: the rollout starts at the first zone.
#[test]
fn without_last_applied_a_held_zone_keeps_its_observed_template() {
    let old = children(&sync_value(&request(&[], [0, 0, 0])));
    let mut req = request_with(spec(), &old, [2, 2, 2]);
    for zone in ZONES {
        let w = &mut req["children"]["Deployment.apps/v1"][format!("cache-{zone}")];
        w["metadata"]["annotations"] = json!({});
    }
    let now = children(&sync_value(&req));
    for zone in ZONES {
        let name = format!("cache-{zone}");
        let find = |list: &[Value]| {
            list.iter()
                .find(|c| c["kind"] == "Deployment" && c["metadata"]["name"] == name)
                .expect("workload")["spec"]["template"]
                .clone()
        };
        assert_eq!(find(&now), find(&old), "{zone}");
    }
}

#[test]
fn turning_zones_on_for_a_statefulset_keeps_naming_its_pods_until_the_zones_are_ready() {
    let mut sts = unzoned();
    sts["workload"] = json!("StatefulSet");
    let running = children(&sync_value(&request_with(sts, &[], [2, 2, 2])));
    let mut zoned = spec();
    zoned["workload"] = json!("StatefulSet");
    let zoned_answer = sync_value(&request_with(zoned, &running, [0, 0, 0]));
    assert_eq!(
        workloads(&zoned_answer),
        [
            "StatefulSet cache-zone-a",
            "StatefulSet cache-zone-b",
            "StatefulSet cache-zone-c",
            "StatefulSet cache",
        ]
    );
    assert_eq!(
        status(&zoned_answer).server_list.unwrap(),
        [
            "cache-0.cache.shop.svc:11211",
            "cache-1.cache.shop.svc:11211"
        ]
    );
    assert_eq!(condition(&zoned_answer, "Progressing").reason, "ZoneSwitch");
}

#[test]
fn turning_zones_off_and_autoscaling_on_at_once_is_refused_and_keeps_the_zones() {
    let running = children(&sync_value(&request(&[], [2, 2, 2])));
    let mut auto = unzoned();
    auto.as_object_mut().unwrap().remove("replicas");
    auto["resources"] = json!({"requests": {"cpu": "100m"}});
    auto["autoscaling"] = json!({"enabled": true, "minReplicas": 2, "maxReplicas": 6});
    let answer = sync_value(&request_with(auto, &running, [2, 2, 2]));
    assert_eq!(workloads(&answer), workloads(&json!({"children": running})));
    let degraded = condition(&answer, "Degraded");
    assert_eq!(degraded.reason, "InvalidSpec");
    assert!(
        degraded.message.contains("spec.autoscaling.enabled")
            && degraded.message.contains("turn zones off first"),
        "{}",
        degraded.message
    );
}

/// Forged or broken counts in the zones' workload status neither wrap nor turn the status
/// negative: each is read as at least 0 and their sum stops at the largest count.
#[test]
fn forged_zone_counts_neither_wrap_nor_turn_negative() {
    let created = children(&sync_value(&request(&[], [2, 2, 2])));
    for (ready, replicas) in [(-2_147_483_645, -715_827_882), (i32::MAX, i32::MAX)] {
        let mut req = request(&created, [2, 2, 2]);
        for zone in ZONES {
            let w = &mut req["children"]["Deployment.apps/v1"][format!("cache-{zone}")];
            w["status"]["readyReplicas"] = json!(ready);
            w["status"]["replicas"] = json!(replicas);
            w["status"]["updatedReplicas"] = json!(replicas);
        }
        let answer = sync_value(&req);
        let s = &answer["status"];
        let count = |field: &str| s[field].as_i64().unwrap_or(0);
        assert!(count("readyReplicas") >= 0, "{s}");
        assert!(count("replicas") >= 0, "{s}");
        assert!(count("readyReplicas") <= i64::from(i32::MAX), "{s}");
        for z in s["zones"].as_array().expect("zones") {
            assert!(z["readyReplicas"].as_i64().unwrap_or(0) >= 0, "{z}");
        }
        let message = &condition(&answer, "Available").message;
        assert!(!message.starts_with('-'), "{message}");
    }
}

/// The image of each zone's Deployment in `answer`, in zone order.
fn images(answer: &Value) -> Vec<String> {
    let now = children(answer);
    ZONES.iter().map(|zone| zone_image(&now, zone)).collect()
}

/// A template-hash annotation edited on a later zone to name the desired template does not
/// start that zone's rollout beside the first one: the template the zone was last given
/// decides, and one zone rolls at a time.
#[test]
fn a_forged_template_hash_on_a_later_zone_starts_no_second_rollout() {
    let old = children(&sync_value(&request(&[], [2, 2, 2])));
    let mut new_spec = spec();
    new_spec["image"] = json!("memcached:1.6.39");
    // Zone c's desired template, as a new cache gets it at once.
    let created = sync_value(&request_with(new_spec.clone(), &[], [0, 0, 0]));
    let desired = named(&children(&created), "Deployment", "cache-zone-c")
        .expect("zone-c")["metadata"]["annotations"]["memcached.c5c3.io/template-hash"]
        .clone();
    assert!(desired.is_string(), "{desired}");
    let mut req = request_with(new_spec, &old, [2, 2, 2]);
    let forged = &mut req["children"]["Deployment.apps/v1"]["cache-zone-c"];
    forged["metadata"]["annotations"]["memcached.c5c3.io/template-hash"] = desired;
    let answer = sync_value(&req);
    let old_image = zone_image(&old, "zone-c");
    assert_eq!(
        images(&answer),
        ["memcached:1.6.39", old_image.as_str(), old_image.as_str()],
        "only the first zone rolls"
    );
}

/// A held zone whose recorded template lacks labels its selector asks for (the zone label) is
/// answered with them: a workload whose selector does not match its template is refused.
#[test]
fn a_held_template_is_answered_with_the_labels_its_selector_matches() {
    let mut old = children(&sync_value(&request(&[], [2, 2, 2])));
    for child in &mut old {
        if child["metadata"]["name"] == "cache-zone-b" && child["kind"] == "Deployment" {
            let labels = child["spec"]["template"]["metadata"]["labels"]
                .as_object_mut()
                .expect("labels");
            labels.retain(|k, _| !k.contains("zone"));
        }
    }
    let mut new_spec = spec();
    new_spec["image"] = json!("memcached:1.6.39");
    let answer = sync_value(&request_with(new_spec, &old, [2, 2, 2]));
    let now = children(&answer);
    let b = named(&now, "Deployment", "cache-zone-b").expect("zone-b");
    let selector = b["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("selector");
    let labels = &b["spec"]["template"]["metadata"]["labels"];
    for (k, v) in selector {
        assert_eq!(&labels[k], v, "{k}: {labels}");
    }
    assert_ne!(zone_image(&now, "zone-b"), "memcached:1.6.39");
}

/// `sync` at `at` (RFC 3339).
fn sync_at(request: &Value, at: &str) -> Value {
    let body = serde_json::to_vec(request).expect("encodes");
    let received = memcached_hook::hook::Received::decode(body).expect("a well-formed request");
    let now = at.parse().expect("a valid timestamp");
    let response = memcached_hook::sync(&received, now, &memcached_hook::Options::default())
        .expect("sync succeeds");
    serde_json::to_value(&response).expect("the response encodes")
}

fn short_since(answer: &Value) -> Vec<Option<String>> {
    status(answer)
        .zones
        .unwrap()
        .into_iter()
        .map(|z| z.short_since)
        .collect()
}

#[test]
fn a_zone_that_never_comes_up_stops_blocking_the_others_after_the_outage_timeout() {
    let mut spec = spec();
    spec["zones"]["outageTimeoutSeconds"] = json!(600);
    let created = "2026-11-22T12:00:00Z";
    // Created: every zone short since now; a resync asked for when the first would be lost.
    let mut answer = sync_at(&request_with(spec.clone(), &[], [0, 0, 0]), created);
    assert_eq!(short_since(&answer), vec![Some(created.to_owned()); 3]);
    assert_eq!(answer["resyncAfterSeconds"], json!(601.0));
    // zone-a and zone-b come up, zone-c never does (no node has its label): every budget
    // blocks while the zones are starting, and zone-c's time is kept as written.
    for at in ["2026-11-22T12:02:00Z", "2026-11-22T12:09:59Z"] {
        let req = after(
            request_with(spec.clone(), &children(&answer), [2, 2, 0]),
            &answer,
        );
        answer = sync_at(&req, at);
        assert_eq!(budgets(&answer), "c c c", "{at}");
        assert_eq!(condition(&answer, "ZoneDisruption").reason, "ZonesStarting");
        assert_eq!(
            short_since(&answer),
            vec![None, None, Some(created.to_owned())]
        );
        let s = condition(&answer, "DisruptionBudgetBlocking");
        assert_eq!(
            (s.status.as_str(), s.reason.as_str()),
            ("True", "ZoneBudgetsBlock")
        );
    }
    assert_eq!(answer["resyncAfterSeconds"], json!(2.0));
    // Ten minutes on: zone-c is lost, zone-a and zone-b get the user's budget, zone-c's blocks.
    let req = after(
        request_with(spec.clone(), &children(&answer), [2, 2, 0]),
        &answer,
    );
    answer = sync_at(&req, "2026-11-22T12:10:00Z");
    assert_eq!(budgets(&answer), "o o c");
    let c = condition(&answer, "ZoneDisruption");
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "ZoneLost"));
    assert!(
        c.message
            .contains("zone-c (short since 2026-11-22T12:00:00Z)"),
        "{}",
        c.message
    );
    let blocking = condition(&answer, "DisruptionBudgetBlocking");
    assert_eq!(blocking.status, "True");
    assert!(
        blocking.message.contains("zones zone-c allow no"),
        "{}",
        blocking.message
    );
    assert!(
        answer.get("resyncAfterSeconds").is_none(),
        "nothing left to wait for"
    );
    // A drain in zone-a now: zone-a holds the allowance, zone-b blocks; zone-c stays lost.
    let req = after(
        request_with(spec.clone(), &children(&answer), [1, 2, 0]),
        &answer,
    );
    answer = sync_at(&req, "2026-11-22T12:20:00Z");
    assert_eq!(budgets(&answer), "o c c");
    assert_eq!(condition(&answer, "ZoneDisruption").reason, "ZoneLost");
    // zone-c comes up at last: it is no longer short, every budget blocks, then all reopen.
    let req = after(
        request_with(spec.clone(), &children(&answer), [2, 2, 2]),
        &answer,
    );
    answer = sync_at(&req, "2026-11-22T12:30:00Z");
    assert_eq!(budgets(&answer), "c c c");
    assert_eq!(short_since(&answer), vec![None, None, None]);
    let req = after(request_with(spec, &children(&answer), [2, 2, 2]), &answer);
    answer = sync_at(&req, "2026-11-22T12:30:05Z");
    assert_eq!(budgets(&answer), "o o o");
    assert_eq!(condition(&answer, "ZoneDisruption").reason, "AllZonesWhole");
    let blocking = condition(&answer, "DisruptionBudgetBlocking");
    assert_eq!(
        (blocking.status.as_str(), blocking.reason.as_str()),
        ("False", "DisruptionsAllowed")
    );
}

#[test]
fn a_drain_that_outlasts_the_timeout_closes_its_zone_before_the_others_open() {
    let whole = settled();
    let drained = sync_at(
        &after(request(&children(&whole), [1, 2, 2]), &whole),
        "2026-11-22T12:00:00Z",
    );
    assert_eq!(budgets(&drained), "o c c");
    // Half an hour later (the default timeout) zone-a is still short: its budget closes, with
    // every other, then zone-b and zone-c open among themselves.
    let losing = sync_at(
        &after(request(&children(&drained), [1, 2, 2]), &drained),
        "2026-11-22T12:30:00Z",
    );
    assert_eq!(budgets(&losing), "c c c");
    assert_eq!(condition(&losing, "ZoneDisruption").reason, "ZoneLost");
    let lost = sync_at(
        &after(request(&children(&losing), [1, 2, 2]), &losing),
        "2026-11-22T12:30:05Z",
    );
    assert_eq!(budgets(&lost), "c o o");
}

#[test]
fn a_short_since_that_is_not_a_time_or_lies_ahead_starts_the_clock_again() {
    let whole = settled();
    for forged in ["yesterday", "2099-01-01T00:00:00Z", ""] {
        let mut req = after(request(&children(&whole), [1, 2, 2]), &whole);
        req["parent"]["status"]["zones"][0]["shortSince"] = json!(forged);
        let answer = sync_at(&req, "2026-11-22T13:00:00Z");
        assert_eq!(budgets(&answer), "o c c", "{forged}");
        assert_eq!(
            short_since(&answer)[0].as_deref(),
            Some("2026-11-22T13:00:00Z"),
            "{forged}"
        );
    }
}

#[test]
fn a_status_zones_of_another_shape_reads_as_none_and_the_sync_answers() {
    let whole = settled();
    for forged in [
        json!("zones"),
        json!([1, "a", null]),
        json!([{"name": 5, "shortSince": 7}]),
        json!([{"name": "zone-a", "shortSince": ["2026-11-22T00:00:00Z"]}]),
    ] {
        let mut req = after(request(&children(&whole), [1, 2, 2]), &whole);
        req["parent"]["status"]["zones"] = forged.clone();
        let answer = sync_at(&req, "2026-11-22T13:00:00Z");
        assert_eq!(budgets(&answer), "o c c", "{forged}");
        assert_eq!(
            short_since(&answer)[0].as_deref(),
            Some("2026-11-22T13:00:00Z"),
            "{forged}"
        );
    }
}
