//! Bounds shared by several spec blocks: image references, Secret names and label or
//! annotation maps. A bound of one block lives in that block's module.
//!
//! Each is in the CRD's schema (so the API server refuses an over-long value) and re-checked by
//! the hook (objects stored before a bound existed). Lengths count characters, as the API server
//! does. docs/behaviour.md gives the reason for each.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::json;

/// An image reference (`image`, `monitoring.exporterImage`).
pub const IMAGE_LENGTH: usize = 1024;
/// A Secret name: a DNS-1123 subdomain.
pub const SECRET_NAME_LENGTH: usize = 253;
/// Entries of a label or annotation map (`serviceMonitor.additionalLabels`,
/// `service.annotations`).
pub const MAP_ENTRIES: usize = 64;
/// A label or annotation key: a DNS-1123 subdomain prefix (253), `/`, a name (63).
pub const KEY_LENGTH: usize = 317;
/// A label value.
pub const LABEL_VALUE_LENGTH: usize = 63;
/// An annotation value.
pub const ANNOTATION_VALUE_LENGTH: usize = 64 * 1024;

/// The CEL rule bounding the keys of a label or annotation map to [`KEY_LENGTH`].
#[must_use]
pub fn key_rule() -> String {
    format!("self.all(k, size(k) <= {KEY_LENGTH})")
}

/// The message of [`key_rule`], also the detail of the hook's own check.
#[must_use]
pub fn key_message() -> String {
    format!("keys may not be more than {KEY_LENGTH} characters")
}

/// The schema of a label or annotation map users write: at most [`MAP_ENTRIES`] entries,
/// values of at most `value_length` characters, keys bounded by [`key_rule`], and the CEL
/// `rules` (rule, message) given.
#[must_use]
pub fn string_map(value_length: usize, rules: &[(&str, &str)]) -> Schema {
    let mut validations = vec![json!({"rule": key_rule(), "message": key_message()})];
    validations.extend(
        rules
            .iter()
            .map(|(rule, message)| json!({"rule": rule, "message": message})),
    );
    json_schema!({
        "type": "object",
        "maxProperties": MAP_ENTRIES,
        "additionalProperties": {"type": "string", "maxLength": value_length},
        "x-kubernetes-validations": validations
    })
}

/// A label map with no further rule (`nodeSelector`, `serviceMonitor.additionalLabels`).
pub fn labels_schema(_: &mut SchemaGenerator) -> Schema {
    string_map(LABEL_VALUE_LENGTH, &[])
}

/// An annotation map with no further rule (`service.annotations`).
pub fn annotations_schema(_: &mut SchemaGenerator) -> Schema {
    string_map(ANNOTATION_VALUE_LENGTH, &[])
}

/// At most `max` bytes of `text`, cut on a character boundary: a message quoted into a
/// condition (the reload agent's on its Pod, the Memcached's from its pods).
#[must_use]
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
