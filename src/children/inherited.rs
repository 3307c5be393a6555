//! `spec.childMetadata` on every child the hook builds: its labels and annotations join each
//! object's own, which win (the hook's labels, the selectors' labels, `service.labels` and
//! `service.annotations`, the hook's annotations). Kept children are answered as observed.

use std::collections::BTreeMap;

use crate::api::child_metadata::ChildMetadata;
use crate::hook::Child;

/// Adds `extra` to `map`, leaving every key `map` has.
fn join(map: &mut Option<BTreeMap<String, String>>, extra: Option<&BTreeMap<String, String>>) {
    let Some(extra) = extra else { return };
    let map = map.get_or_insert_with(BTreeMap::new);
    for (key, value) in extra {
        map.entry(key.clone()).or_insert_with(|| value.clone());
    }
}

/// `meta`'s labels and annotations on every built child of `children`.
pub fn apply(children: &mut [Child], meta: ChildMetadata<'_>) {
    if meta.labels.is_none() && meta.annotations.is_none() {
        return;
    }
    for metadata in children.iter_mut().filter_map(Child::metadata_mut) {
        join(&mut metadata.labels, meta.labels);
        join(&mut metadata.annotations, meta.annotations);
    }
}
