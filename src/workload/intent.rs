//! Whether a workload keeps the pod template it runs: pods change only when their Memcached
//! changes.
//!
//! A workload's pod template changes only when its owner's intent for it changes: the spec
//! (less `spec.replicas` and `spec.childMetadata`, which never change the template), a
//! requested rollout (the
//! `memcached.c5c3.io/restart-trigger` annotation on the Memcached) and the observed inputs the
//! template carries (the secret hash of `secretRotation: Restart`). A new rendering of the same
//! intent by a newer hook (new defaults, security contexts, arguments, a new tag of the hook's
//! own image) reaches a workload only with the next change of that intent.
//!
//! The hook records the intent's [`digest`] on each workload ([`ANNOTATION`]) beside the
//! template; the next sync keeps the observed template when the digest is unchanged
//! ([`decide`]). Everything is read from what is observed, never from memory in the process.

use std::sync::LazyLock;

use serde_json::Value;

use crate::api::MemcachedSpec;
use crate::children::pod::Rollers;
use crate::hook::ObservedChild;

/// Workload annotation: the [`digest`] of the intent its pod template was rendered for.
pub const ANNOTATION: &str = "memcached.c5c3.io/source";

/// The schema of `spec` in the served and stored version of the CRD, for its defaults.
static SPEC_SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    let crd = crate::api::crd();
    let version = crd.spec.versions.into_iter().find(|v| v.storage);
    let schema = version
        .and_then(|v| v.schema)
        .and_then(|s| s.open_api_v3_schema);
    let value = schema.and_then(|s| serde_json::to_value(s).ok());
    value
        .and_then(|mut v| v.pointer_mut("/properties/spec").map(Value::take))
        .unwrap_or(Value::Null)
});

/// The digest of the owner's intent for the pod templates: the spec without `replicas`, without
/// `childMetadata` (the objects' metadata, never the pods') and without any value equal to the CRD schema's default (the API server fills a new CRD's
/// defaults into stored objects when it reads them: that is no edit), the restart trigger and
/// the secret hash. 16 hex digits of a BLAKE3 hash of the canonical JSON (keys sorted).
#[must_use]
pub fn digest(spec: &MemcachedSpec, rollers: Rollers<'_>) -> String {
    let mut spec = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut spec {
        map.remove("replicas");
        map.remove("childMetadata");
    }
    prune(&mut spec, &SPEC_SCHEMA);
    let intent = serde_json::json!({
        "spec": spec,
        "restartTrigger": rollers.restart_trigger.filter(|t| !t.is_empty()),
        "secretHash": rollers.secret_hash,
    });
    let json = serde_json::to_vec(&intent).unwrap_or_default();
    hex::encode(&blake3::hash(&json).as_bytes()[..8])
}

/// Drops from `value` every `null` and every member equal to its schema default, after
/// dropping those of its own members.
fn prune(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties");
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            map.retain(|key, member| {
                if member.is_null() {
                    return false;
                }
                let Some(member_schema) = properties.and_then(|p| p.get(key)).or(additional) else {
                    return true;
                };
                prune(member, member_schema);
                !is_default(member, member_schema)
            });
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items.iter_mut() {
                    prune(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// Whether `value` (pruned) is the default of `schema` (pruned the same way).
fn is_default(value: &Value, schema: &Value) -> bool {
    schema.get("default").is_some_and(|default| {
        let mut default = default.clone();
        prune(&mut default, schema);
        default == *value
    })
}

/// What the parent says of its own history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parent {
    /// `status.observedGeneration == metadata.generation`: the owner changed nothing in the
    /// spec since the last sync.
    pub synced: bool,
    /// The hook's setting: every workload adopts the hook's rendering at once.
    pub adopt_at_once: bool,
}

impl Parent {
    /// Whether the parent of `generation` with `observed_generation` in its status is synced.
    #[must_use]
    pub fn synced(generation: Option<i64>, observed_generation: Option<i64>) -> bool {
        generation.is_some() && generation == observed_generation
    }
}

/// What a workload is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Template {
    /// The pod template it runs, unchanged.
    Keep,
    /// A workload without [`ANNOTATION`] (rendered by an older hook, or adopted) of a synced
    /// parent: the template it runs, unless the observed inputs its template records (the
    /// secret hash, the restart trigger) differ from the ones rendered now.
    KeepIfRollersAgree,
    /// The template rendered now.
    Render,
}

/// What the workload `current` (observed, if any) is answered with, for the intent of
/// [`digest`] `digest` and what its `parent` says.
#[must_use]
pub fn decide(current: Option<&ObservedChild>, digest: &str, parent: Parent) -> Template {
    let Some(current) = current else {
        return Template::Render;
    };
    if parent.adopt_at_once {
        return Template::Render;
    }
    match recorded(current) {
        Some(recorded) if recorded == digest => Template::Keep,
        None if parent.synced => Template::KeepIfRollersAgree,
        _ => Template::Render,
    }
}

/// The digest recorded on the observed workload, if any.
#[must_use]
pub fn recorded(current: &ObservedChild) -> Option<&str> {
    let annotations = current.metadata.annotations.as_ref();
    annotations.and_then(|a| a.source.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: Value) -> MemcachedSpec {
        serde_json::from_value(json).expect("a spec")
    }

    fn none() -> Rollers<'static> {
        Rollers::default()
    }

    #[test]
    fn replicas_do_not_count() {
        let a = digest(&spec(serde_json::json!({"replicas": 1})), none());
        let b = digest(&spec(serde_json::json!({"replicas": 5})), none());
        assert_eq!(a, b);
    }

    #[test]
    fn child_metadata_does_not_count() {
        let a = digest(&spec(serde_json::json!({})), none());
        let b = digest(
            &spec(serde_json::json!({"childMetadata": {"labels": {"team": "a"}}})),
            none(),
        );
        assert_eq!(a, b);
    }

    #[test]
    fn a_default_the_crd_fills_in_is_no_edit() {
        let bare = spec(serde_json::json!({"memcached": {"maxMemoryMB": 128}}));
        let filled = spec(serde_json::json!({
            "memcached": {"maxMemoryMB": 128, "threads": 4, "maxConnections": 1024},
            "workload": "Deployment",
            "security": {"secretRotation": "Reload"},
            "monitoring": {},
            "service": {},
        }));
        assert_eq!(digest(&bare, none()), digest(&filled, none()));
    }

    #[test]
    fn an_edit_changes_the_digest() {
        let a = spec(serde_json::json!({"memcached": {"maxMemoryMB": 128}}));
        let b = spec(serde_json::json!({"memcached": {"maxMemoryMB": 256}}));
        assert_ne!(digest(&a, none()), digest(&b, none()));
        // A value other than the default is an edit, even where the default exists.
        let c = spec(serde_json::json!({"memcached": {"maxMemoryMB": 128, "threads": 8}}));
        assert_ne!(digest(&a, none()), digest(&c, none()));
    }

    #[test]
    fn a_rollout_request_and_a_secret_change_the_digest() {
        let s = spec(serde_json::json!({}));
        let base = digest(&s, none());
        let asked = Rollers {
            restart_trigger: Some("2026-12-02T07:00:00Z"),
            ..Rollers::default()
        };
        let rotated = Rollers {
            secret_hash: Some("abc"),
            ..Rollers::default()
        };
        let empty = Rollers {
            restart_trigger: Some(""),
            ..Rollers::default()
        };
        assert_ne!(base, digest(&s, asked));
        assert_ne!(base, digest(&s, rotated));
        assert_eq!(base, digest(&s, empty));
    }

    /// The digest is what the next release compares with: its definition must not drift.
    #[test]
    fn the_digest_of_a_fixed_intent_is_fixed() {
        let s = spec(serde_json::json!({"memcached": {"maxMemoryMB": 128}}));
        assert_eq!(digest(&s, none()), "6272693e08de70b9");
    }
}
