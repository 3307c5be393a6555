//! A child kept as Metacontroller's dynamic apply recorded it: the
//! `metacontroller.k8s.io/last-applied-configuration` annotation holds this hook's last answer.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::hook::ObservedChild;

/// The identity of a last-applied configuration.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity<'a> {
    #[serde(borrow)]
    api_version: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    metadata: IdentityMeta<'a>,
}

#[derive(Deserialize)]
struct IdentityMeta<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
}

/// The observed child as this hook last desired it: Metacontroller's last-applied
/// configuration, when it names that very child (a hand-edited annotation naming another
/// object would make Metacontroller delete the observed child and create a stranger). A child
/// without a namespace of its own is in `namespace`, the parent's.
pub(super) fn last_applied(child: &ObservedChild, namespace: &str) -> Option<Box<RawValue>> {
    let text = child.last_applied()?;
    let raw = RawValue::from_string(text).ok()?;
    let id: Identity<'_> = serde_json::from_str(raw.get()).ok()?;
    let child_namespace = child.metadata.namespace.as_deref().unwrap_or(namespace);
    let same = id.api_version == child.api_version
        && id.kind == child.kind
        && id.metadata.name == child.metadata.name
        && id
            .metadata
            .namespace
            .as_deref()
            .is_none_or(|ns| ns == child_namespace);
    same.then_some(raw)
}
