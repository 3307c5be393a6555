//! Upgrading the hook changes no running cache: the children earlier builds of the hook
//! answered (`tests/fixtures/upgrade/<commit>/`, captured once from a real build of that commit
//! with `capture.sh`), observed as Metacontroller holds them, get the very pod templates they
//! run from today's hook, also with the hook's own image at a new tag. A spec change, or a
//! requested rollout, then gives them today's rendering.

use std::path::{Path, PathBuf};

use memcached_hook::Options;
use serde_json::{Value, json};

use crate::common::{condition, sync_with};

const LAST_APPLIED: &str = "metacontroller.k8s.io/last-applied-configuration";
/// The hook's own image the earlier builds were run with (`capture.sh`).
const OLD_TAG: &str = "registry.example.com/memcached-hook:0.1.0";
/// The same image at the next release's tag.
const NEW_TAG: &str = "registry.example.com/memcached-hook:0.1.1";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade")
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every captured answer: `(commit, case, request, answer)`.
fn captured() -> Vec<(String, String, Value, Value)> {
    let mut out = Vec::new();
    let mut commits: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("tests/fixtures/upgrade")
        .map(|e| e.expect("entry").path())
        // The answers of each commit, in a directory named by its abbreviated hash.
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            p.is_dir() && name.is_some_and(|n| n.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .collect();
    commits.sort();
    for commit in commits {
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&commit)
            .expect("a commit's answers")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        cases.sort();
        for answer in cases {
            let case = answer
                .file_name()
                .expect("named")
                .to_string_lossy()
                .into_owned();
            let request = read(&fixtures().join("requests").join(&case));
            let name = commit
                .file_name()
                .expect("named")
                .to_string_lossy()
                .into_owned();
            out.push((name, case, request, read(&answer)));
        }
    }
    out
}

/// The request Metacontroller sends once it applied `answer` to `request` and every workload
/// settled: each child with the last-applied annotation of what was answered, the workloads'
/// pods all updated and ready, and the parent's status as answered.
fn next_request(request: &Value, answer: &Value) -> Value {
    let mut next = request.clone();
    next["parent"]["status"] = answer["status"].clone();
    next["parent"]["status"]["observedGeneration"] =
        next["parent"]["metadata"]["generation"].clone();
    let mut children = json!({});
    for child in answer["children"].as_array().expect("children") {
        let mut obj = child.clone();
        obj["metadata"]["namespace"] = json!("shop");
        obj["metadata"]["generation"] = json!(1);
        let applied = serde_json::to_string(child).expect("encodes");
        obj["metadata"]["annotations"][LAST_APPLIED] = json!(applied);
        if matches!(obj["kind"].as_str(), Some("Deployment" | "StatefulSet")) {
            let n = obj["spec"]["replicas"].as_i64().unwrap_or(1);
            obj["status"] = json!({"observedGeneration": 1, "replicas": n, "updatedReplicas": n,
                "readyReplicas": n, "availableReplicas": n,
                "currentRevision": "r1", "updateRevision": "r1"});
        }
        let key = format!(
            "{}.{}",
            obj["kind"].as_str().expect("kind"),
            obj["apiVersion"].as_str().expect("apiVersion")
        );
        let name = obj["metadata"]["name"].as_str().expect("name").to_owned();
        children[key][name] = obj;
    }
    next["children"] = children;
    next
}

/// Each workload's `(kind/name, pod template)` in `answer`.
fn templates(answer: &Value) -> Vec<(String, Value)> {
    let children = answer["children"].as_array().expect("children");
    children
        .iter()
        .filter(|c| matches!(c["kind"].as_str(), Some("Deployment" | "StatefulSet")))
        .map(|c| {
            let id = format!(
                "{}/{}",
                c["kind"].as_str().unwrap_or_default(),
                c["metadata"]["name"]
            );
            (id, c["spec"]["template"].clone())
        })
        .collect()
}

fn options(agent: &str) -> Options {
    Options {
        reload_agent_image: agent.to_owned().into(),
        ..Options::default()
    }
}

#[test]
fn every_sample_and_combination_of_two_earlier_releases_is_captured() {
    let found = captured();
    for commit in ["29a9f6b", "a16735c"] {
        let cases = found.iter().filter(|(c, ..)| c == commit).count();
        assert!(cases >= 10, "{commit}: {cases} captured answers");
    }
}

#[test]
fn an_upgrade_keeps_every_pod_template() {
    let mut would_roll = 0;
    let mut total = 0;
    for (commit, case, request, old) in captured() {
        let next = next_request(&request, &old);
        for agent in [OLD_TAG, NEW_TAG] {
            let answer = sync_with(&next, &options(agent));
            assert_eq!(
                templates(&answer),
                templates(&old),
                "{commit} {case} ({agent})"
            );
        }
        // What today's hook would have rolled without the rule.
        let fresh = sync_with(&request, &options(NEW_TAG));
        total += 1;
        if templates(&fresh) != templates(&old) {
            would_roll += 1;
            let answer = sync_with(&next, &options(NEW_TAG));
            let up = condition(&answer, "UpToDate");
            assert_eq!(up.status, "False", "{commit} {case}");
            assert!(
                up.message.contains("would change: "),
                "{commit} {case}: {}",
                up.message
            );
        }
    }
    assert!(would_roll > 0 && total >= 20, "{would_roll} of {total}");
}

/// The spec change of [`a_spec_change_or_a_requested_rollout_adopts_todays_rendering`]:
/// `memcached.maxMemoryMB` one less than it is.
fn changed_memory(request: &Value) -> Value {
    let mut next = request.clone();
    let spec = &mut next["parent"]["spec"];
    let memory = spec["memcached"]["maxMemoryMB"].as_i64().unwrap_or(64);
    spec["memcached"]["maxMemoryMB"] = json!(memory - 1);
    next
}

#[test]
fn a_spec_change_or_a_requested_rollout_adopts_todays_rendering() {
    for (commit, case, request, old) in captured() {
        let settled = next_request(&request, &old);
        let mut edited = changed_memory(&settled);
        edited["parent"]["metadata"]["generation"] = json!(2);
        let mut asked = settled.clone();
        asked["parent"]["metadata"]["annotations"] =
            json!({"memcached.c5c3.io/restart-trigger": "2026-12-02T07:00:00Z"});
        for (what, next, first) in [
            ("maxMemoryMB", &edited, changed_memory(&request)),
            ("rollout request", &asked, asked_first(&request)),
        ] {
            let answer = sync_with(next, &options(NEW_TAG));
            let fresh = templates(&sync_with(&first, &options(NEW_TAG)));
            adopts(
                &templates(&answer),
                &fresh,
                &templates(&old),
                &format!("{commit} {case} {what}"),
            );
        }
    }
}

/// Every workload of `got` carries either today's rendering (`fresh`) or, held by a zone
/// rollout or kept during a switch, the `old` one; at least one carries today's, and zones
/// roll in order (the first zone first).
fn adopts(got: &[(String, Value)], fresh: &[(String, Value)], old: &[(String, Value)], what: &str) {
    let find = |list: &[(String, Value)], id: &str| {
        list.iter().find(|(i, _)| i == id).map(|(_, t)| t.clone())
    };
    let mut today = Vec::new();
    for (id, t) in got {
        match (find(fresh, id), find(old, id)) {
            (Some(f), _) if *t == f => today.push(id.clone()),
            (_, Some(o)) => assert_eq!(*t, o, "{what}: {id} is neither today's nor the old one"),
            (None, None) => {
                // A workload the change creates (a bridge while claims change): rendered today.
                let text = t.to_string();
                assert!(!text.contains(OLD_TAG), "{what}: {id}");
                today.push(id.clone());
            }
            (Some(f), None) => assert_eq!(*t, f, "{what}: {id}"),
        }
    }
    assert!(
        !today.is_empty(),
        "{what}: nothing adopts today's rendering"
    );
    if let (Some((first, _)), true) = (got.first(), old.len() > 1 && got.len() == old.len()) {
        assert_eq!(
            today,
            std::slice::from_ref(first),
            "{what}: zones roll one at a time, first first"
        );
    }
}

/// The first request of `request`'s Memcached with a rollout requested.
fn asked_first(request: &Value) -> Value {
    let mut first = request.clone();
    first["parent"]["metadata"]["annotations"] =
        json!({"memcached.c5c3.io/restart-trigger": "2026-12-02T07:00:00Z"});
    first
}
