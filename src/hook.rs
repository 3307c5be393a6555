//! Metacontroller's wire format for the CompositeController sync hook (hook API v1 and v2).
//!
//! Requests are decoded narrowly: only what the hook reads is kept (the CompositeController's
//! declared child resources; the parent's identity, spec and conditions; each observed child's
//! identity, last-applied annotation, replicas and rollout status). Everything else, such as
//! `managedFields` or pod templates, is skipped by serde without being stored. Observed children
//! are collected by value: the map keys (`name` in v1, `namespace/name` in v2) are never read.
//!
//! Every JSON object the hook reads refuses a repeated key (see [`strict`]); what it skips is
//! not looked at. The CompositeController's hook versions are read so that a body of a shape
//! the hook does not know (a hook API other than v1 and v2) is refused instead of guessed at.

mod customize;
mod forward;
mod observed;
pub mod pods;
mod received;
mod related;
mod response;
pub mod service_monitor;
mod shape;
mod strict;

pub use customize::{
    CustomizeController, CustomizeControllerSpec, CustomizeHooks, CustomizeRequest,
    CustomizeResponse, ResourceRule,
};
pub use observed::{ChildMeta, ChildStatus, Observed, ObservedChild, RawString};
pub use received::{Received, Sent};
pub use related::{EndedContainer, RELOAD_CONDITION, RelatedMeta, RelatedObject, ReloadReport};
pub use response::{Child, SyncResponse};

use std::fmt;

use serde::de::{DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::api::{Condition, MemcachedSpec};

/// A decoding error with the JSON path of the field at fault (`.` for the whole document).
pub type DecodeError = serde_path_to_error::Error<serde_json::Error>;

/// Decodes a hook request body exactly as the server does: the whole body must be one JSON
/// document; an error names the JSON path where decoding failed.
///
/// Well-formed requests are decoded once, without path tracking (which copies the name of
/// every key it passes into a new `String`); only a request that fails is decoded a second time
/// with tracking, to name the field at fault. Both decodes run the same `Deserialize` code, so
/// the result and the error are those of a tracked decode.
///
/// The body is checked as UTF-8 once, up front, and serde_json decodes it as text (so that it
/// does not check each string it reads again). serde_json alone: a decoder of the hook's own
/// that skipped unread content faster saved less than 14 % of a realistic request's
/// instructions in the server (BENCHMARKS.md), not worth its own code and its tests.
///
/// A body that is not UTF-8 is refused as malformed wherever the invalid bytes are, even inside
/// content the hook skips: JSON exchanged between systems must be UTF-8 (RFC 8259), Go's
/// encoder never writes anything else, and the check costs nothing more (the text is checked
/// anyway).
///
/// # Errors
/// Malformed JSON or UTF-8, trailing data, or JSON of the wrong shape.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, DecodeError> {
    let text = std::str::from_utf8(body).map_err(|e| {
        let error = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not valid UTF-8 (at byte {})", e.valid_up_to()),
        );
        serde_path_to_error::Error::new(
            serde_path_to_error::Track::new().path(),
            serde_json::Error::io(error),
        )
    })?;
    match decode_untracked(serde_json::Deserializer::from_str(text)) {
        Some(value) => Ok(value),
        None => decode_tracked(body),
    }
}

/// One decode without path tracking; `None` on any error.
fn decode_untracked<'de, R: serde_json::de::Read<'de>, T: DeserializeOwned>(
    mut deserializer: serde_json::Deserializer<R>,
) -> Option<T> {
    let value = T::deserialize(shape::TopLevel(&mut deserializer)).ok()?;
    deserializer.end().ok()?;
    Some(value)
}

/// [`decode`] with the JSON path of every field tracked.
fn decode_tracked<T: DeserializeOwned>(body: &[u8]) -> Result<T, DecodeError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(shape::TopLevel(&mut deserializer))?;
    deserializer.end().map_err(|e| {
        serde_path_to_error::Error::new(serde_path_to_error::Track::new().path(), e)
    })?;
    Ok(value)
}

/// Decodes a parent given as a JSON value (`render` reads it from YAML) with the checks the
/// parent of a request gets; an error names the field's path within the parent.
///
/// # Errors
/// JSON of the wrong shape for a parent.
pub fn decode_parent(value: &serde_json::Value) -> Result<Parent, DecodeError> {
    #[derive(Deserialize)]
    struct Checked(#[serde(deserialize_with = "strict::deserialize")] Parent);
    serde_path_to_error::deserialize(value).map(|Checked(parent)| parent)
}

/// Room reserved for an encoded answer: a sync answer (workload, Service, budget, status)
/// is 4 to 8 KiB, so it is written into one allocation without growing.
const ANSWER_CAPACITY: usize = 8 * 1024;

/// Encodes a hook answer as the server sends it, into a buffer sized for a sync answer.
///
/// # Errors
/// A value that cannot be represented as JSON.
pub fn encode<T: Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(ANSWER_CAPACITY);
    serde_json::to_writer(&mut out, value)?;
    Ok(out)
}

/// The body of a sync (or finalize) call.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncRequest {
    /// The calling CompositeController.
    #[serde(deserialize_with = "strict::deserialize")]
    pub controller: Controller,
    /// The parent Memcached, from Metacontroller's cache.
    #[serde(deserialize_with = "strict::deserialize")]
    pub parent: Parent,
    /// Observed children, grouped by `Kind.apiVersion` (checked for duplicate keys by
    /// [`Observed`] itself).
    #[serde(default)]
    pub children: Observed,
    /// Related objects from the customize hook, same shape as `children`.
    #[serde(default)]
    pub related: Observed<RelatedObject>,
    /// `true` for a finalize call; answered like a sync.
    #[serde(default)]
    pub finalizing: bool,
}

/// The CompositeController, reduced to its declared child resources.
#[derive(Debug, Deserialize)]
pub struct Controller {
    /// `spec` of the CompositeController.
    pub spec: ControllerSpec,
}

/// The part of a CompositeController's spec the hook reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerSpec {
    /// Child resources Metacontroller manages for this controller.
    pub child_resources: Vec<ChildResource>,
    /// The hooks that call `/sync`: their versions.
    #[serde(default, deserialize_with = "null_as_default")]
    pub hooks: SyncHooks,
}

/// The hooks whose calls `/sync` answers. A finalize hook, when there is one, usually points at
/// `/sync` too (the hook answers a finalize call like a sync).
#[derive(Debug, Default, Deserialize)]
pub struct SyncHooks {
    /// `spec.hooks.sync`.
    #[serde(default)]
    pub sync: Option<Hook>,
    /// `spec.hooks.finalize`.
    #[serde(default)]
    pub finalize: Option<Hook>,
}

/// One hook of a CompositeController, reduced to its version.
#[derive(Debug, Default, Deserialize)]
pub struct Hook {
    /// The hook API version; absent or `null` means v1.
    #[serde(default)]
    pub version: Option<HookVersion>,
}

/// Metacontroller's hook API version. v1 and v2 differ only in the keys of the `children` and
/// `related` maps (`name` against `namespace/name`), which the hook never reads. Any other value
/// is refused when decoding: it announces a body of a shape this hook does not know.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HookVersion {
    /// `v1`, the default.
    #[default]
    V1,
    /// `v2`.
    V2,
}

impl<'de> Deserialize<'de> for HookVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct VersionVisitor;

        impl Visitor<'_> for VersionVisitor {
            type Value = HookVersion;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Metacontroller hook API version, \"v1\" or \"v2\"")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HookVersion, E> {
                match v {
                    "v1" => Ok(HookVersion::V1),
                    "v2" => Ok(HookVersion::V2),
                    other => Err(E::custom(format_args!(
                        "unknown Metacontroller hook API version {}: {UNDERSTOOD_VERSIONS}",
                        serde_json::to_string(&other.chars().take(64).collect::<String>())
                            .unwrap_or_default()
                    ))),
                }
            }
        }

        deserializer.deserialize_str(VersionVisitor)
    }
}

/// One `childResources` entry.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ChildResource {
    /// `group/version` or `v1`.
    pub api_version: String,
    /// Plural resource name, e.g. `deployments`.
    pub resource: String,
}

impl Controller {
    /// Whether the controller declares `resource` in `api_version`.
    #[must_use]
    pub fn declares(&self, api_version: &str, resource: &str) -> bool {
        self.spec
            .child_resources
            .iter()
            .any(|c| c.api_version == api_version && c.resource == resource)
    }
}

/// The parent Memcached.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Parent {
    /// `memcached.c5c3.io/v1beta1` or `memcached.c5c3.io/v1alpha1`.
    pub api_version: String,
    /// `Memcached`.
    pub kind: String,
    /// Identity and the restart-trigger annotation.
    pub metadata: ParentMeta,
    /// The spec (JSON `null` or absent means all defaults).
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: MemcachedSpec,
    /// The current status; only its conditions, observed generation and the zones'
    /// `shortSince` are read.
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: ParentStatus,
}

/// Parent metadata the hook reads.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentMeta {
    /// Name of the Memcached (and of every child).
    pub name: String,
    /// Namespace of the Memcached.
    #[serde(default)]
    pub namespace: Option<String>,
    /// `metadata.uid`: the controller reference Metacontroller gives each child names it.
    #[serde(default)]
    pub uid: Option<String>,
    /// `metadata.generation`.
    #[serde(default)]
    pub generation: Option<i64>,
    /// Annotations the hook reads.
    #[serde(default, deserialize_with = "null_as_default")]
    pub annotations: ParentAnnotations,
}

/// Parent annotations the hook reads.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ParentAnnotations {
    /// `memcached.c5c3.io/restart-trigger`, copied to the pod template.
    #[serde(rename = "memcached.c5c3.io/restart-trigger", default)]
    pub restart_trigger: Option<String>,
}

/// The parent's current status, reduced to what a sync reads back.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentStatus {
    /// `status.observedGeneration`: the generation the hook last answered for (a value that
    /// is not an integer reads as none: the status is the hook's own record, never a reason to
    /// refuse a sync).
    #[serde(default, deserialize_with = "lenient_generation")]
    pub observed_generation: Option<i64>,
    /// Current conditions, including types other controllers wrote.
    #[serde(default, deserialize_with = "null_as_default")]
    pub conditions: Vec<Condition>,
    /// `status.zones` as the last sync wrote it: only since when each zone is short is read
    /// (an entry of another shape reads as none, as for `observedGeneration`).
    #[serde(default, deserialize_with = "lenient_zones")]
    pub zones: Vec<ZoneShort>,
    /// `status.desiredReplicas`, only whether it is there (of any value): this hook writes it in
    /// every status, another controller of the same kind (the reference operator) never, so a
    /// status without it is none of this hook's answers.
    #[serde(default)]
    pub desired_replicas: Option<serde::de::IgnoredAny>,
}

/// A zone's entry of `status.zones`, as far as a sync reads it back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneShort {
    /// The zone.
    pub name: String,
    /// Since when the zone is short of ready pods (RFC 3339), as the last sync wrote it.
    pub short_since: Option<String>,
}

/// An integer, or none for any other value.
fn lenient_generation<'de, D>(deserializer: D) -> Result<Option<i64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(serde_json::Value::deserialize(deserializer)?.as_i64())
}

/// The zones' entries of `status.zones` that are objects, at most as many as a spec has zones:
/// their `name` and `shortSince` when they are strings.
fn lenient_zones<'de, D>(deserializer: D) -> Result<Vec<ZoneShort>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = serde_json::Value::deserialize(deserializer)?;
    let text = |z: &serde_json::Value, key: &str| z.get(key)?.as_str().map(str::to_owned);
    Ok(value
        .as_array()
        .into_iter()
        .flatten()
        .filter(|z| z.is_object())
        .take(crate::api::zones::MAX_ZONES)
        .map(|z| ZoneShort {
            name: text(z, "name").unwrap_or_default(),
            short_since: text(z, "shortSince"),
        })
        .collect())
}

/// Treats JSON `null` like an absent field.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// What an unknown hook API version is told.
const UNDERSTOOD_VERSIONS: &str = "this hook understands \"v1\" and \"v2\" only";
