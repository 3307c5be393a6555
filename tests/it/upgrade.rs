//! Pods change only when their Memcached changes: a workload keeps the pod template it runs
//! while its owner's intent is unchanged, whatever this hook renders now (docs/behaviour.md,
//! "Pod templates across hook releases"). An older rendering is simulated here by editing the
//! template of today's answer; `upgrade_fixtures.rs` feeds the real answers of earlier builds.

use memcached_hook::Options;
use memcached_hook::workload::rollout;
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

const UID: &str = "0d7c5a4e-1f2b-4c3d-8e9f-a1b2c3d4e5f6";
const TEMPLATE_HASH: &str = "memcached.c5c3.io/template-hash";

/// The field set (`FieldsV1`) server-side apply records for `value` applied: every member
/// named, lists of named objects (and ports, mounts) keyed by their merge keys, other lists
/// atomic.
fn field_set(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut set = serde_json::Map::new();
            for (key, member) in map {
                set.insert(format!("f:{key}"), list_or_set(key, member));
            }
            Value::Object(set)
        }
        _ => json!({}),
    }
}

fn list_or_set(key: &str, member: &Value) -> Value {
    let Some(items) = member.as_array() else {
        return field_set(member);
    };
    let merge_key = |item: &Value| match key {
        "ports" if item.get("containerPort").is_some() => Some(json!({
            "containerPort": item["containerPort"],
            "protocol": item.get("protocol").cloned().unwrap_or(json!("TCP"))})),
        "volumeMounts" => Some(json!({"mountPath": item["mountPath"]})),
        _ => item.get("name").map(|name| json!({"name": name})),
    };
    if !items
        .iter()
        .all(|i| i.is_object() && merge_key(i).is_some())
    {
        return json!({}); // atomic
    }
    let mut set = serde_json::Map::new();
    for item in items {
        let mut sub = field_set(item);
        sub[".".to_owned()] = json!({});
        let k = merge_key(item).expect("keyed");
        set.insert(
            format!("k:{}", serde_json::to_string(&k).expect("encodes")),
            sub,
        );
    }
    Value::Object(set)
}

/// The children of `answer` as the API server holds them once Metacontroller applied them
/// with server-side apply and they settled: the answer's fields, Metacontroller's controller
/// reference, its `Apply` entry in `managedFields` naming exactly what it applied, and the
/// API server's defaults in the pod templates (fields nobody applied).
fn observed_ssa(answer: &Value) -> Vec<Value> {
    let owner = json!({"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
        "name": "cache", "uid": UID, "controller": true, "blockOwnerDeletion": true});
    let children = answer["children"].as_array().expect("children");
    observed(answer, false)
        .into_iter()
        .zip(children)
        .map(|(mut obj, applied)| {
            let mut set = field_set(applied);
            for key in ["f:apiVersion", "f:kind"] {
                set.as_object_mut().expect("a set").remove(key);
            }
            let meta = set["f:metadata"].as_object_mut().expect("metadata");
            meta.remove("f:name");
            meta.insert(
                "f:ownerReferences".to_owned(),
                json!({format!("k:{{\"uid\":\"{UID}\"}}"): {".": {}}}),
            );
            obj["metadata"]["ownerReferences"] = json!([owner]);
            obj["metadata"]["managedFields"] = json!([
                {"manager": "metacontroller", "operation": "Apply", "apiVersion": "apps/v1",
                 "fieldsType": "FieldsV1", "fieldsV1": set},
                {"manager": "kube-controller-manager", "operation": "Update",
                 "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:replicas": {}}}}]);
            if let Some(pod) = obj["spec"]["template"]["spec"].as_object_mut() {
                pod.insert("dnsPolicy".to_owned(), json!("ClusterFirst"));
                pod.insert("schedulerName".to_owned(), json!("default-scheduler"));
                for c in pod["containers"].as_array_mut().expect("containers") {
                    c["imagePullPolicy"] = json!("IfNotPresent");
                    c["terminationMessagePath"] = json!("/dev/termination-log");
                }
            }
            obj
        })
        .collect()
}

/// A request observing `children`, under server-side apply: the parent has its UID.
fn request_ssa(spec: &Value, generation: (i64, i64), children: &[Value]) -> Value {
    let mut next = request(spec, generation, children);
    next["parent"]["metadata"]["uid"] = json!(UID);
    next
}

/// `answer` as an older hook that records the hash of the template it answers would have
/// rendered it ([`older`], stamped).
fn older_hashed(answer: &Value) -> Value {
    let mut old = older(answer, true);
    for w in old["children"].as_array_mut().expect("children") {
        if matches!(w["kind"].as_str(), Some("Deployment" | "StatefulSet")) {
            let template = serde_json::from_value(w["spec"]["template"].clone());
            let hash = rollout::template_hash(&template.expect("a template"));
            w["metadata"]["annotations"][TEMPLATE_HASH] = json!(hash);
        }
    }
    old
}

/// The workload named `name` of the observed `children`.
fn child_mut<'a>(children: &'a mut [Value], name: &str) -> &'a mut Value {
    children
        .iter_mut()
        .find(|c| c["metadata"]["name"] == name && c["kind"] != "Service")
        .unwrap_or_else(|| panic!("no workload {name}"))
}

/// Under server-side apply there is no last-applied annotation: the template Metacontroller
/// applied is read from its managed fields, and kept when its hash is the one the workload
/// records (the hash of the template answered), whatever the hook renders now (here: no
/// security contexts and another agent tag). Kept, it is answered exactly as applied, so a
/// second apply changes nothing; the hash recorded is the same.
#[test]
fn under_server_side_apply_the_applied_template_is_kept() {
    let spec = json!({"replicas": 2, "memcached": {"maxMemoryMB": 128},
                      "security": {"tls": {"enabled": true, "certificateSecretRef": {"name": "tls"}},
                                   "secretRotation": "Reload"}});
    let today = sync_value(&request_ssa(&spec, (1, 0), &[]));
    let old = older_hashed(&today);
    let answer = sync_value(&request_ssa(&spec, (1, 1), &observed_ssa(&old)));
    assert_eq!(template(&answer, "cache"), template(&old, "cache"));
    let up = condition(&answer, "UpToDate");
    assert_eq!(
        (up.status.as_str(), up.reason.as_str()),
        ("False", "NewRendering")
    );
    assert!(up.message.contains("image"), "{}", up.message);
    let w = workloads(&answer)[0];
    let was = workloads(&old)[0];
    assert_eq!(
        w["metadata"]["annotations"][TEMPLATE_HASH],
        was["metadata"]["annotations"][TEMPLATE_HASH]
    );
    // Applied again and observed: the same answer.
    let again = sync_value(&request_ssa(&spec, (1, 1), &observed_ssa(&answer)));
    assert_eq!(again["children"], answer["children"]);
}

/// A field another manager took over (`kubectl edit`: operation `Update`) leaves
/// Metacontroller's set: the template read back no longer hashes to what was answered, and the
/// rendered template is answered, undoing the edit.
#[test]
fn under_server_side_apply_a_hand_edit_gets_the_rendered_template() {
    let today = sync_value(&request_ssa(&spec(), (1, 0), &[]));
    let old = older_hashed(&today);
    // Unedited, the older template is kept.
    let kept = sync_value(&request_ssa(&spec(), (1, 1), &observed_ssa(&old)));
    assert_eq!(template(&kept, "cache"), template(&old, "cache"));
    let mut live = observed_ssa(&old);
    let w = child_mut(&mut live, "cache");
    w["spec"]["template"]["spec"]["containers"][0]["image"] = json!("memcached:edited-by-hand");
    let set = &mut w["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
        ["f:containers"];
    let key = set
        .as_object()
        .and_then(|s| s.keys().find(|k| k.contains("memcached")).cloned())
        .expect("the memcached container");
    set[&key].as_object_mut().expect("a set").remove("f:image");
    w["metadata"]["managedFields"]
        .as_array_mut()
        .expect("entries")
        .push(
            json!({"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {
                "f:containers": {key.clone(): {"f:image": {}}}}}}}}),
        );
    let answer = sync_value(&request_ssa(&spec(), (1, 1), &live));
    assert_eq!(template(&answer, "cache"), template(&today, "cache"));
    assert_eq!(condition(&answer, "UpToDate").status, "True");

    // A value changed under Metacontroller's own field (no other manager): the hash tells.
    let mut live = observed_ssa(&old);
    let w = child_mut(&mut live, "cache");
    w["spec"]["template"]["spec"]["containers"][0]["image"] = json!("memcached:edited-by-hand");
    let answer = sync_value(&request_ssa(&spec(), (1, 1), &live));
    assert_eq!(template(&answer, "cache"), template(&today, "cache"));

    // No hash recorded (an earlier build's workload): nothing proves the template.
    let mut live = observed_ssa(&old);
    let w = child_mut(&mut live, "cache");
    w["metadata"]["annotations"]
        .as_object_mut()
        .expect("annotated")
        .remove(TEMPLATE_HASH);
    let answer = sync_value(&request_ssa(&spec(), (1, 1), &live));
    assert_eq!(template(&answer, "cache"), template(&today, "cache"));
}

/// A spec change under server-side apply: today's rendering.
#[test]
fn under_server_side_apply_a_spec_change_gets_the_rendered_template() {
    let today = sync_value(&request_ssa(&spec(), (1, 0), &[]));
    let live = observed_ssa(&older_hashed(&today));
    let changed = json!({"replicas": 2, "memcached": {"maxMemoryMB": 256}});
    let answer = sync_value(&request_ssa(&changed, (2, 1), &live));
    let fresh = sync_value(&request_ssa(&changed, (1, 0), &[]));
    assert_eq!(template(&answer, "cache"), template(&fresh, "cache"));
    assert_eq!(condition(&answer, "UpToDate").status, "True");
}

/// Zones under server-side apply keep their templates across a new rendering, and a spec
/// change still rolls zone by zone, the held zones answered as applied.
#[test]
fn under_server_side_apply_zones_keep_theirs_and_roll_zone_by_zone() {
    let spec = json!({"replicas": 2, "zones": {"names": ["a", "b", "c"]}});
    let today = sync_value(&request_ssa(&spec, (1, 0), &[]));
    let old = older_hashed(&today);
    let answer = sync_value(&request_ssa(&spec, (1, 1), &observed_ssa(&old)));
    for zone in ["cache-a", "cache-b", "cache-c"] {
        assert_eq!(template(&answer, zone), template(&old, zone), "{zone}");
    }
    let changed = json!({"replicas": 2, "zones": {"names": ["a", "b", "c"]},
                         "memcached": {"maxMemoryMB": 256}});
    let rolled = sync_value(&request_ssa(&changed, (2, 1), &observed_ssa(&old)));
    assert!(template(&rolled, "cache-a")["spec"]["securityContext"].is_object());
    for zone in ["cache-b", "cache-c"] {
        assert_eq!(template(&rolled, zone), template(&old, zone), "{zone}");
    }
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

/// A Deployment written by another controller, as the reference operator leaves it once
/// Metacontroller adopts it: the same name and selector labels, no mark of this hook (no
/// last-applied configuration, no digest, no template hash), the API server's defaults filled
/// in, every pod ready.
fn adopted_deployment() -> Value {
    let labels = json!({"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "cache",
                        "app.kubernetes.io/managed-by": "memcached-operator"});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cache", "namespace": "shop", "generation": 3, "labels": labels,
                     "annotations": {"deployment.kubernetes.io/revision": "1"}},
        "spec": {
            "replicas": 2, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{
                        "name": "memcached", "image": "memcached:1.6",
                        "args": ["-m", "128", "-c", "1024", "-t", "4", "-I", "1m"],
                        "ports": [{"name": "memcached", "containerPort": 11211, "protocol": "TCP"}],
                        "livenessProbe": {"tcpSocket": {"port": "memcached"},
                            "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 1,
                            "successThreshold": 1, "failureThreshold": 3},
                        "readinessProbe": {"tcpSocket": {"port": "memcached"},
                            "initialDelaySeconds": 5, "periodSeconds": 5, "timeoutSeconds": 1,
                            "successThreshold": 1, "failureThreshold": 3},
                        "resources": {},
                        "imagePullPolicy": "IfNotPresent",
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File"
                    }],
                    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                    "securityContext": {}
                }
            }
        },
        "status": {"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2,
                   "readyReplicas": 2, "availableReplicas": 2}
    })
}

/// Another operator's workload, adopted: it keeps the pods it runs until its owner's first
/// change, and the answer marks it so that the next sync keeps it as any other.
#[test]
fn an_adopted_workload_keeps_its_pods_until_the_owners_first_change() {
    let live = adopted_deployment();
    let answer = sync_value(&request(&spec(), (1, 1), std::slice::from_ref(&live)));
    assert_eq!(template(&answer, "cache"), &live["spec"]["template"]);
    let w = workloads(&answer)[0];
    assert!(w["metadata"]["annotations"][SOURCE].is_string(), "{w}");
    assert!(
        w["metadata"]["annotations"][TEMPLATE_HASH].is_string(),
        "{w}"
    );
    let up = condition(&answer, "UpToDate");
    assert_eq!(
        (up.status.as_str(), up.reason.as_str()),
        ("False", "NewRendering"),
        "{}",
        up.message
    );

    // Applied (the answer is its last-applied configuration now) and observed again: kept.
    let again = sync_value(&request(&spec(), (1, 1), &observed(&answer, true)));
    assert_eq!(template(&again, "cache"), &live["spec"]["template"]);

    // The owner's first change: today's rendering.
    let changed = json!({"replicas": 2, "memcached": {"maxMemoryMB": 256}});
    let today = sync_value(&request(&changed, (1, 0), &[]));
    let rolled = sync_value(&request(&changed, (2, 1), &observed(&answer, true)));
    assert_eq!(template(&rolled, "cache"), template(&today, "cache"));
    assert_eq!(condition(&rolled, "UpToDate").status, "True");

    // Adopted while its owner's change is still unsynced: nothing to keep it for.
    let unsynced = sync_value(&request(&changed, (2, 1), std::slice::from_ref(&live)));
    assert_eq!(template(&unsynced, "cache"), template(&today, "cache"));
}

/// A workload that carries a mark of this hook but whose answer cannot be proven (here: the
/// digest, but neither a last-applied configuration nor a template hash) is not taken for an
/// adopted one: it gets today's rendering, as before.
#[test]
fn a_marked_workload_without_its_answer_is_not_taken_for_an_adopted_one() {
    let mut live = adopted_deployment();
    let today = sync_value(&request(&spec(), (1, 0), &[]));
    let digest = workloads(&today)[0]["metadata"]["annotations"][SOURCE].clone();
    live["metadata"]["annotations"][SOURCE] = digest;
    let answer = sync_value(&request(&spec(), (1, 1), &[live]));
    assert_eq!(template(&answer, "cache"), template(&today, "cache"));
}

/// The same Deployment before Metacontroller adopts it: not observed as a child, sent as a
/// related object (held by no one) while the Memcached is unsettled. Server-side apply takes such
/// an object over with the answer, so the answer carries the template it runs.
#[test]
fn an_unowned_workload_of_the_childs_name_keeps_its_pods_when_taken_over() {
    let live = adopted_deployment();
    let mut req = request(&spec(), (1, 1), &[]);
    req["related"] = json!({"Deployment.apps/v1": {"shop/cache": live.clone()}});
    let answer = sync_value(&req);
    assert_eq!(template(&answer, "cache"), &live["spec"]["template"]);
    assert_eq!(condition(&answer, "UpToDate").status, "False");

    let today = sync_value(&request(&spec(), (1, 0), &[]));
    // A new Memcached (its status not of its generation): nothing to keep it for.
    let mut new = req.clone();
    new["parent"]["status"] = json!({});
    assert_eq!(
        template(&sync_value(&new), "cache"),
        template(&today, "cache")
    );
    // Controlled by another owner: never taken over, never kept.
    let mut owned = req.clone();
    owned["related"]["Deployment.apps/v1"]["shop/cache"]["metadata"]["ownerReferences"] = json!([
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "u-9", "controller": true}]);
    assert_eq!(
        template(&sync_value(&owned), "cache"),
        template(&today, "cache")
    );
}

/// A release with another default memcached image keeps the running template, and the
/// workload's `app.kubernetes.io/version` label keeps naming what its pods run: a label that
/// followed today's default would claim a version no pod runs, and under dynamic apply its
/// change alone moves a Deployment's `metadata.generation` at every upgrade.
#[test]
fn a_new_default_image_keeps_the_workloads_version_label() {
    const VERSION: &str = "app.kubernetes.io/version";
    let earlier = Options {
        default_image: "memcached:1.6.44".into(),
        ..Options::default()
    };
    let old = sync_with(&request(&spec(), (1, 0), &[]), &earlier);
    let answer = sync_value(&request(&spec(), (1, 1), &observed(&old, true)));
    assert_eq!(template(&answer, "cache"), template(&old, "cache"));
    let w = workloads(&answer)[0];
    assert_eq!(
        w["metadata"]["labels"][VERSION], "1.6.44",
        "{}",
        w["metadata"]
    );
    assert_eq!(
        w["spec"]["template"]["metadata"]["labels"][VERSION],
        "1.6.44"
    );
    let up = condition(&answer, "UpToDate");
    assert!(
        up.message.contains("memcached image 1.6.44 -> 1.6.45"),
        "{}",
        up.message
    );
    // The requested rollout moves both to today's.
    let mut spec = spec();
    spec["replicas"] = json!(3);
    let mut rolled = request(&spec, (2, 1), &observed(&old, true));
    rolled["parent"]["metadata"]["annotations"] =
        json!({"memcached.c5c3.io/restart-trigger": "2026-12-02T12:00:00Z"});
    let answer = sync_value(&rolled);
    let w = workloads(&answer)[0];
    assert_eq!(w["metadata"]["labels"][VERSION], "1.6.45");
    assert_eq!(
        w["spec"]["template"]["metadata"]["labels"][VERSION],
        "1.6.45"
    );
}
