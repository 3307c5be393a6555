//! The Memcached's pods among the related objects (the customize hook asks for them with the
//! hook's `--relate-pods`), and how a condition names them.

use crate::hook::RelatedObject;

/// At most this many pods are named in one list; the rest are counted.
const NAMED: usize = 8;

/// Whether `o` is a Pod of `namespace`.
pub(super) fn is_pod_of(o: &RelatedObject, namespace: &str) -> bool {
    o.kind == "Pod"
        && o.api_version == "v1"
        && o.metadata
            .namespace
            .as_deref()
            .is_none_or(|ns| ns == namespace)
}

/// Pod order: by length first, so that a StatefulSet's pod 10 comes after its pod 9.
pub(super) fn order(name: &str) -> (usize, &str) {
    (name.len(), name)
}

/// ` (a, b, c)`, at most [`NAMED`] of them and how many more; empty for none.
pub(super) fn named(items: impl ExactSizeIterator<Item = String>) -> String {
    let total = items.len();
    if total == 0 {
        return String::new();
    }
    let shown: Vec<String> = items.take(NAMED).collect();
    let more = total - shown.len();
    if more == 0 {
        format!(" ({})", shown.join(", "))
    } else {
        format!(" ({} and {more} more)", shown.join(", "))
    }
}

/// A related Pod `name` of `ns` with nothing in its status (for tests).
#[cfg(test)]
pub(super) fn test_pod(name: &str, ns: &str) -> RelatedObject {
    RelatedObject {
        api_version: "v1".into(),
        kind: "Pod".into(),
        metadata: crate::hook::RelatedMeta {
            name: name.into(),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        data: None,
        init_containers: Vec::new(),
        reload: None,
    }
}
