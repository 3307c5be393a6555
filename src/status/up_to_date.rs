//! `UpToDate`: whether every workload runs the pod template this hook renders now, and, in the
//! user's words, what a rollout would change where one does not.
//!
//! A workload keeps its pod template while its owner's intent is unchanged
//! (`src/workload/intent.rs`), so after an upgrade of the hook it may run an older rendering.
//! [`differences`] compares the kept template with the one rendered now, part by part.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{Map, Value};

/// Condition type: every workload runs the pod template this hook renders now.
pub const UP_TO_DATE: &str = "UpToDate";
/// Every workload runs the current rendering.
pub const CURRENT: &str = "CurrentRendering";
/// A workload keeps an older rendering until its owner's next change or requested rollout.
pub const NEW_RENDERING: &str = "NewRendering";

/// Container fields compared one by one, with the words that name them.
const CONTAINER_PARTS: [(&str, &str); 10] = [
    ("command", "command"),
    ("args", "arguments"),
    ("securityContext", "security context"),
    ("resources", "resources"),
    ("livenessProbe", "probes"),
    ("readinessProbe", "probes"),
    ("startupProbe", "probes"),
    ("env", "environment"),
    ("volumeMounts", "volume mounts"),
    ("ports", "ports"),
];

/// What a rollout from the `kept` template to the `rendered` one would change, in the user's
/// words, in a stable order; empty when nothing. `exact`: `kept` is the template this hook gave
/// (last-applied), compared whole; otherwise it is the live template with the API server's
/// defaults, and only what `rendered` sets is compared.
#[must_use]
pub fn differences(kept: &PodTemplateSpec, rendered: &PodTemplateSpec, exact: bool) -> Vec<String> {
    if exact && kept == rendered {
        return Vec::new();
    }
    let kept = serde_json::to_value(kept).unwrap_or(Value::Null);
    let rendered = serde_json::to_value(rendered).unwrap_or(Value::Null);
    let differ = |k: Option<&Value>, r: Option<&Value>| !agree(k, r, exact);
    let mut found = Vec::new();
    let mut security = Vec::new();
    let (k_meta, r_meta) = (kept.get("metadata"), rendered.get("metadata"));
    for (key, words) in [("annotations", "pod annotations"), ("labels", "pod labels")] {
        if differ(field(k_meta, key), field(r_meta, key)) {
            found.push(words.to_owned());
        }
    }
    let (k_spec, r_spec) = (kept.get("spec"), rendered.get("spec"));
    if differ(
        field(k_spec, "securityContext"),
        field(r_spec, "securityContext"),
    ) {
        security.push("pod".to_owned());
    }
    for list in ["initContainers", "containers"] {
        containers(list, k_spec, r_spec, exact, &mut found, &mut security);
    }
    if differ(field(k_spec, "volumes"), field(r_spec, "volumes")) {
        found.push("volumes".to_owned());
    }
    let covered = ["initContainers", "containers", "securityContext", "volumes"];
    let keys: BTreeSet<&String> = [k_spec, r_spec]
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(Map::keys)
        .filter(|k| !covered.contains(&k.as_str()))
        .collect();
    for key in keys {
        if differ(field(k_spec, key), field(r_spec, key)) {
            found.push(format!("pod {key}"));
        }
    }
    if !security.is_empty() {
        found.insert(0, format!("security contexts ({})", security.join(", ")));
    }
    found
}

/// The differences of the containers of `list` (matched by name) into `found`, their security
/// contexts' names into `security`.
fn containers(
    list: &str,
    kept: Option<&Value>,
    rendered: Option<&Value>,
    exact: bool,
    found: &mut Vec<String>,
    security: &mut Vec<String>,
) {
    let by_name = |spec: Option<&Value>| -> Vec<(String, Value)> {
        let items = field(spec, list).and_then(Value::as_array);
        items
            .into_iter()
            .flatten()
            .map(|c| (name(c), c.clone()))
            .collect()
    };
    let (kept, rendered) = (by_name(kept), by_name(rendered));
    for (name, r) in &rendered {
        let Some((_, k)) = kept.iter().find(|(n, _)| n == name) else {
            found.push(format!("adds {name}"));
            continue;
        };
        let (ki, ri) = (k.get("image"), r.get("image"));
        if !agree(ki, ri, exact) {
            found.push(format!("{name} image {}", images(ki, ri)));
        }
        let mut parts: Vec<&str> = Vec::new();
        for (key, words) in CONTAINER_PARTS {
            if !agree(k.get(key), r.get(key), exact) {
                if key == "securityContext" {
                    security.push(name.clone());
                } else if !parts.contains(&words) {
                    parts.push(words);
                }
            }
        }
        let others: BTreeSet<&String> = [k, r]
            .into_iter()
            .filter_map(Value::as_object)
            .flat_map(Map::keys)
            .filter(|key| {
                !["name", "image"].contains(&key.as_str())
                    && !CONTAINER_PARTS.iter().any(|(part, _)| part == key)
            })
            .collect();
        let mut parts: Vec<String> = parts.into_iter().map(str::to_owned).collect();
        parts.extend(
            others
                .into_iter()
                .filter(|key| !agree(k.get(*key), r.get(*key), exact))
                .cloned(),
        );
        found.extend(parts.into_iter().map(|p| format!("{name} {p}")));
    }
    for (name, _) in kept
        .iter()
        .filter(|(n, _)| !rendered.iter().any(|(r, _)| r == n))
    {
        found.push(format!("removes {name}"));
    }
}

/// `from -> to`, naming only the tags when the repositories agree.
fn images(kept: Option<&Value>, rendered: Option<&Value>) -> String {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("none").to_owned();
    let (k, r) = (text(kept), text(rendered));
    match (k.rsplit_once(':'), r.rsplit_once(':')) {
        (Some((kr, kt)), Some((rr, rt))) if kr == rr && !kt.contains('/') && !rt.contains('/') => {
            format!("{kt} -> {rt}")
        }
        _ => format!("{k} -> {r}"),
    }
}

fn name(container: &Value) -> String {
    let name = container.get("name").and_then(Value::as_str);
    name.unwrap_or_default().to_owned()
}

fn field<'a>(parent: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    parent.and_then(|p| p.get(key))
}

/// Whether the kept value agrees with the rendered one: equal when `exact`, else every field
/// the rendered value sets has the same value in the kept one (which may add the API server's
/// defaults).
fn agree(kept: Option<&Value>, rendered: Option<&Value>, exact: bool) -> bool {
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    match (kept, rendered) {
        (k, r) if empty(k) && empty(r) => true,
        (Some(k), Some(r)) if exact => k == r,
        (_, r) if empty(r) => !exact,
        (Some(k), Some(r)) => covers(k, r),
        _ => false,
    }
}

/// Every field `small` sets has the same value in `big`.
fn covers(big: &Value, small: &Value) -> bool {
    match (big, small) {
        (Value::Object(b), Value::Object(s)) => s
            .iter()
            .all(|(key, v)| b.get(key).is_some_and(|bv| covers(bv, v))),
        (Value::Array(b), Value::Array(s)) => {
            b.len() == s.len() && b.iter().zip(s).all(|(bv, sv)| covers(bv, sv))
        }
        (b, s) => b == s,
    }
}

/// The message of `UpToDate` False: what a rollout would change.
#[must_use]
pub fn message(differences: &[String]) -> String {
    format!(
        "the pods run an older rendering of this hook, kept until the next change of the spec \
         or a requested rollout (the memcached.c5c3.io/restart-trigger annotation); a rollout \
         would change: {}",
        differences.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(value: Value) -> PodTemplateSpec {
        serde_json::from_value(value).expect("a template")
    }

    fn pod(agent: &str, run_as_non_root: bool, args: &[&str]) -> PodTemplateSpec {
        template(json!({
            "metadata": {"labels": {"app": "m"}},
            "spec": {
                "securityContext": {"runAsNonRoot": run_as_non_root},
                "containers": [
                    {"name": "memcached", "image": "memcached:1.6.45", "args": args},
                    {"name": "reload-agent", "image": format!("ghcr.io/c5c3/memcached-hook:{agent}")},
                ],
            },
        }))
    }

    #[test]
    fn the_same_template_has_no_differences() {
        let a = pod("0.1.0", true, &["-m", "64"]);
        assert!(differences(&a, &a, true).is_empty());
        assert!(differences(&a, &a, false).is_empty());
    }

    #[test]
    fn each_part_is_named_in_the_users_words() {
        let kept = pod("0.1.0", false, &["-m", "64"]);
        let rendered = pod("0.1.1", true, &["-m", "64", "-t", "4"]);
        assert_eq!(
            differences(&kept, &rendered, true),
            [
                "security contexts (pod)",
                "memcached arguments",
                "reload-agent image 0.1.0 -> 0.1.1",
            ]
        );
    }

    #[test]
    fn the_live_template_agrees_when_it_only_adds_server_defaults() {
        let rendered = pod("0.1.0", true, &["-m", "64"]);
        let mut live = serde_json::to_value(&rendered).expect("json");
        live["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
        live["spec"]["dnsPolicy"] = json!("ClusterFirst");
        let live = template(live);
        assert!(differences(&live, &rendered, false).is_empty());
        assert_eq!(
            differences(&live, &rendered, true),
            ["memcached imagePullPolicy", "pod dnsPolicy"]
        );
    }

    #[test]
    fn containers_added_and_removed() {
        let kept = pod("0.1.0", true, &[]);
        let mut rendered = serde_json::to_value(&kept).expect("json");
        rendered["spec"]["containers"][1]["name"] = json!("stats-exporter");
        let rendered = template(rendered);
        assert_eq!(
            differences(&kept, &rendered, true),
            ["adds stats-exporter", "removes reload-agent"]
        );
    }
}
