//! Pods change only when their Memcached changes: a workload keeps the pod template it runs
//! while its owner's intent is unchanged, whatever this hook renders now (docs/behaviour.md,
//! "Pod templates across hook releases"). An older rendering is simulated here by editing the
//! template of today's answer; `upgrade_fixtures.rs` feeds the real answers of earlier builds.

use memcached_hook::Options;
use serde_json::{Value, json};

use crate::common::{condition, sync_value, sync_with};

const SOURCE: &str = "memcached.c5c3.io/source";
const LAST_APPLIED: &str = "metacontroller.k8s.io/last-applied-configuration";

/// The request of the Memcached `cache` in `shop` with `spec` at `generation`, whose status
/// says it was last synced at `synced` generation, observing `children` as Metacontroller
/// holds them after applying them ([`observed`]).
fn request(spec: &Value, (generation, synced): (i64, i64), children: &[Value]) -> Value {
    let mut observed_children = json!({"Deployment.apps/v1": {}, "StatefulSet.apps/v1": {},
        "Service.v1": {}, "PodDisruptionBudget.policy/v1": {}});
    for child in children {
        let key = format!(
            "{}.{}",
            child["kind"].as_str().expect("kind"),
            child["apiVersion"].as_str().expect("apiVersion")
        );
        let name = child["metadata"]["name"].as_str().expect("name").to_owned();
        observed_children[key][name] = child.clone();
    }
    let mut controller = crate::common::controller();
    controller["spec"]["childResources"]
        .as_array_mut()
        .expect("a list")
        .push(json!({"apiVersion": "apps/v1", "resource": "statefulsets"}));
    json!({
        "controller": controller,
        "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                   "metadata": {"name": "cache", "namespace": "shop", "generation": generation},
                   "spec": spec, "status": {"observedGeneration": synced}},
        "children": observed_children,
        "related": {}
    })
}

/// The children of `answer` as Metacontroller holds them once applied and settled: each with
/// the last-applied annotation of what was answered (`last_applied`: dynamic apply; otherwise
/// server-side apply, where the object carries the answer's fields as they are), workloads with
/// every pod updated and ready.
fn observed(answer: &Value, last_applied: bool) -> Vec<Value> {
    let children = answer["children"].as_array().expect("children");
    children
        .iter()
        .map(|child| {
            let mut obj = child.clone();
            obj["metadata"]["namespace"] = json!("shop");
            obj["metadata"]["generation"] = json!(1);
            if last_applied {
                let applied = serde_json::to_string(child).expect("encodes");
                obj["metadata"]["annotations"][LAST_APPLIED] = json!(applied);
            }
            if matches!(obj["kind"].as_str(), Some("Deployment" | "StatefulSet")) {
                let n = obj["spec"]["replicas"].as_i64().unwrap_or(1);
                obj["status"] = json!({"observedGeneration": 1, "replicas": n,
                    "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n,
                    "currentRevision": "r1", "updateRevision": "r1"});
            }
            obj
        })
        .collect()
}

/// `answer` as an older hook would have rendered it: no security contexts, the reload agent
/// (if any) at another tag, and (`stamped`) the intent's digest recorded or (not) none.
fn older(answer: &Value, stamped: bool) -> Value {
    let mut answer = answer.clone();
    for child in answer["children"].as_array_mut().expect("children") {
        if !matches!(child["kind"].as_str(), Some("Deployment" | "StatefulSet")) {
            continue;
        }
        if !stamped {
            let annotations = child["metadata"]["annotations"].as_object_mut();
            annotations.expect("annotated").remove(SOURCE);
        }
        let pod = &mut child["spec"]["template"]["spec"];
        pod.as_object_mut()
            .expect("a pod")
            .remove("securityContext");
        for list in ["initContainers", "containers"] {
            let containers = pod.get_mut(list).and_then(Value::as_array_mut);
            for c in containers.into_iter().flatten() {
                c.as_object_mut()
                    .expect("a container")
                    .remove("securityContext");
                if let Some(image) = c["image"].as_str()
                    && image.contains("memcached-hook")
                {
                    c["image"] = json!(format!(
                        "{}:0.0.9",
                        image.rsplit_once(':').expect("tagged").0
                    ));
                }
            }
        }
    }
    answer
}

fn workloads(answer: &Value) -> Vec<&Value> {
    let children = answer["children"].as_array().expect("children");
    children
        .iter()
        .filter(|c| matches!(c["kind"].as_str(), Some("Deployment" | "StatefulSet")))
        .collect()
}

/// The pod template of the workload named `name`.
fn template<'a>(answer: &'a Value, name: &str) -> &'a Value {
    let found = workloads(answer)
        .into_iter()
        .find(|w| w["metadata"]["name"] == name);
    &found.unwrap_or_else(|| panic!("no workload {name}: {answer}"))["spec"]["template"]
}

fn spec() -> Value {
    json!({"replicas": 2, "memcached": {"maxMemoryMB": 128}})
}

/// A cache rendered by an older hook, observed with the spec unchanged.
fn upgraded(spec: &Value, stamped: bool, last_applied: bool, synced: i64) -> (Value, Value) {
    let today = sync_value(&request(spec, (1, 0), &[]));
    let old = older(&today, stamped);
    let next = request(spec, (1, synced), &observed(&old, last_applied));
    (old, next)
}

#[test]
fn an_older_rendering_of_an_unchanged_spec_is_kept() {
    let last_applied = true;
    let (old, next) = upgraded(&spec(), false, last_applied, 1);
    let answer = sync_value(&next);
    assert_eq!(
        template(&answer, "cache"),
        template(&old, "cache"),
        "{last_applied}"
    );
    let w = workloads(&answer)[0];
    assert_eq!(w["spec"]["replicas"], 2);
    assert!(w["metadata"]["annotations"][SOURCE].is_string(), "stamped");
    let up = condition(&answer, "UpToDate");
    assert_eq!(
        (up.status.as_str(), up.reason.as_str()),
        ("False", "NewRendering")
    );
    assert!(
        up.message.contains("security contexts (pod, memcached)"),
        "{}",
        up.message
    );
    // Stamped now: the next sync keeps it by its digest.
    let again = sync_value(&request(&spec(), (1, 1), &observed(&answer, last_applied)));
    assert_eq!(template(&again, "cache"), template(&old, "cache"));
}

#[test]
fn a_workload_without_a_digest_of_a_changed_spec_gets_the_new_rendering() {
    let (old, next) = upgraded(&spec(), false, true, 0);
    let answer = sync_value(&next);
    assert_ne!(template(&answer, "cache"), template(&old, "cache"));
    let today = sync_value(&request(&spec(), (1, 0), &[]));
    assert_eq!(template(&answer, "cache"), template(&today, "cache"));
    assert_eq!(condition(&answer, "UpToDate").status, "True");
}

#[test]
fn a_recorded_digest_keeps_the_template_whatever_the_parent_status_says() {
    let (old, next) = upgraded(&spec(), true, true, 0);
    let answer = sync_value(&next);
    assert_eq!(template(&answer, "cache"), template(&old, "cache"));
}

#[test]
fn replicas_and_a_filled_in_crd_default_are_no_edit() {
    let (old, _) = upgraded(&spec(), true, true, 1);
    let children = observed(&old, true);
    let scaled = json!({"replicas": 5, "memcached": {"maxMemoryMB": 128, "threads": 4},
                        "workload": "Deployment", "security": {"secretRotation": "Reload"}});
    let answer = sync_value(&request(&scaled, (2, 1), &children));
    assert_eq!(template(&answer, "cache"), template(&old, "cache"));
    assert_eq!(workloads(&answer)[0]["spec"]["replicas"], 5);
}

#[test]
fn a_spec_change_adopts_the_new_rendering() {
    let (old, _) = upgraded(&spec(), true, true, 1);
    let changed = json!({"replicas": 2, "memcached": {"maxMemoryMB": 256}});
    let answer = sync_value(&request(&changed, (2, 1), &observed(&old, true)));
    let fresh = sync_value(&request(&changed, (1, 0), &[]));
    assert_eq!(template(&answer, "cache"), template(&fresh, "cache"));
    assert_eq!(condition(&answer, "UpToDate").status, "True");
}

#[test]
fn a_requested_rollout_adopts_the_new_rendering() {
    let (old, _) = upgraded(&spec(), true, true, 1);
    let mut next = request(&spec(), (1, 1), &observed(&old, true));
    next["parent"]["metadata"]["annotations"] =
        json!({"memcached.c5c3.io/restart-trigger": "2026-12-02T07:00:00Z"});
    let answer = sync_value(&next);
    let t = template(&answer, "cache");
    assert_eq!(
        t["metadata"]["annotations"]["memcached.c5c3.io/restart-trigger"],
        "2026-12-02T07:00:00Z"
    );
    assert!(
        t["spec"]["securityContext"].is_object(),
        "today's rendering"
    );
}

#[test]
fn the_setting_gives_every_cache_the_new_rendering_at_once() {
    let (old, next) = upgraded(&spec(), true, true, 1);
    let options = Options {
        adopt_new_rendering: true,
        ..Options::default()
    };
    let answer = sync_with(&next, &options);
    assert_ne!(template(&answer, "cache"), template(&old, "cache"));
    assert!(template(&answer, "cache")["spec"]["securityContext"].is_object());
}

#[test]
fn a_restarted_hook_answers_the_same() {
    let (_, next) = upgraded(&spec(), false, true, 1);
    assert_eq!(sync_value(&next), sync_value(&next));
}

/// SASL with `secretRotation` `Reload` (the agent, the hook's own image) and `RollingRestart`
/// (the secret hash in the template): a new tag keeps both; a rotated Secret rolls the second.
#[test]
fn secret_rotation_still_rolls_where_it_did() {
    let secret = |password: &str| {
        json!({"Secret.v1": {"shop/sasl": {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "sasl", "namespace": "shop"},
            "data": {"password-file": password}}}})
    };
    for (rotation, rolls) in [("Reload", false), ("RollingRestart", true)] {
        let spec = json!({"security": {"secretRotation": rotation,
            "sasl": {"enabled": true, "credentialsSecretRef": {"name": "sasl"}}}});
        let mut first = request(&spec, (1, 0), &[]);
        first["related"] = secret("dTpw");
        let today = sync_value(&first);
        for stamped in [true, false] {
            let old = older(&today, stamped);
            let mut next = request(&spec, (1, 1), &observed(&old, true));
            next["related"] = secret("dTpw");
            let kept = sync_value(&next);
            assert_eq!(
                template(&kept, "cache"),
                template(&old, "cache"),
                "{rotation}"
            );
            next["related"] = secret("dTpxMg==");
            let rotated = sync_value(&next);
            let moved = template(&rotated, "cache") != template(&old, "cache");
            assert_eq!(moved, rolls, "{rotation} stamped {stamped}");
        }
    }
}

#[test]
fn zones_each_keep_their_own_and_a_change_rolls_zone_by_zone() {
    let spec = json!({"replicas": 2, "zones": {"names": ["a", "b", "c"]}});
    let today = sync_value(&request(&spec, (1, 0), &[]));
    let old = older(&today, true);
    let answer = sync_value(&request(&spec, (1, 1), &observed(&old, true)));
    for zone in ["cache-a", "cache-b", "cache-c"] {
        assert_eq!(template(&answer, zone), template(&old, zone), "{zone}");
    }
    // A spec change: the first zone gets today's rendering, the others hold theirs, with the
    // digest they were rendered for.
    let changed = json!({"replicas": 2, "zones": {"names": ["a", "b", "c"]},
                         "memcached": {"maxMemoryMB": 256}});
    let rolled = sync_value(&request(&changed, (2, 1), &observed(&old, true)));
    assert!(template(&rolled, "cache-a")["spec"]["securityContext"].is_object());
    for zone in ["cache-b", "cache-c"] {
        assert_eq!(template(&rolled, zone), template(&old, zone), "{zone}");
        let held = workloads(&rolled)
            .into_iter()
            .find(|w| w["metadata"]["name"] == zone);
        let was = workloads(&old)
            .into_iter()
            .find(|w| w["metadata"]["name"] == zone);
        let digest =
            |w: Option<&Value>| w.expect("a zone")["metadata"]["annotations"][SOURCE].clone();
        assert_eq!(digest(held), digest(was), "{zone} keeps the digest it runs");
    }
}

#[test]
fn a_switch_renders_the_new_workload_and_keeps_the_leaving_one() {
    let (old, _) = upgraded(&spec(), true, true, 1);
    let to_statefulset = json!({"replicas": 2, "memcached": {"maxMemoryMB": 128},
                                "workload": "StatefulSet"});
    let answer = sync_value(&request(&to_statefulset, (2, 1), &observed(&old, true)));
    let fresh = sync_value(&request(&to_statefulset, (1, 0), &[]));
    let statefulset = |a: &Value| {
        workloads(a)
            .into_iter()
            .find(|w| w["kind"] == "StatefulSet")
            .expect("a StatefulSet")["spec"]["template"]
            .clone()
    };
    assert_eq!(statefulset(&answer), statefulset(&fresh));
    let leaving = workloads(&answer)
        .into_iter()
        .find(|w| w["kind"] == "Deployment");
    let leaving = leaving.expect("the Deployment kept during the switch");
    assert_eq!(leaving["spec"]["template"], *template(&old, "cache"));
}

#[test]
fn an_invalid_spec_keeps_everything_as_observed() {
    let (old, _) = upgraded(&spec(), true, true, 1);
    let invalid = json!({"replicas": -1, "memcached": {"maxMemoryMB": 128}});
    let answer = sync_value(&request(&invalid, (2, 1), &observed(&old, true)));
    assert_eq!(template(&answer, "cache"), template(&old, "cache"));
}

/// Under server-side apply there is no last-applied template: the live one carries the API
/// server's defaults and possibly a hand edit, which Metacontroller must undo. Such a workload is
/// answered with the rendered template (the rule keeps only what this hook last answered).
#[test]
fn under_server_side_apply_the_rendered_template_is_answered() {
    let today = sync_value(&request(&spec(), (1, 0), &[]));
    let mut live = older(&today, true);
    for child in live["children"].as_array_mut().expect("children") {
        if child["kind"] == "Deployment" {
            let pod = &mut child["spec"]["template"]["spec"];
            pod["dnsPolicy"] = json!("ClusterFirst");
            pod["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
            pod["containers"][0]["image"] = json!("memcached:edited-by-hand");
        }
    }
    let answer = sync_value(&request(&spec(), (1, 1), &observed(&live, false)));
    assert_eq!(template(&answer, "cache"), template(&today, "cache"));
    assert_eq!(condition(&answer, "UpToDate").status, "True");
}

#[test]
fn zones_turned_on_render_the_zones_and_keep_the_leaving_workload() {
    let (old, _) = upgraded(&spec(), true, true, 1);
    let zoned = json!({"replicas": 2, "memcached": {"maxMemoryMB": 128},
                       "zones": {"names": ["a", "b"]}});
    let answer = sync_value(&request(&zoned, (2, 1), &observed(&old, true)));
    let fresh = sync_value(&request(&zoned, (1, 0), &[]));
    for zone in ["cache-a", "cache-b"] {
        assert_eq!(template(&answer, zone), template(&fresh, zone), "{zone}");
    }
    assert_eq!(
        template(&answer, "cache"),
        template(&old, "cache"),
        "kept while leaving"
    );
}
