//! The schema pieces of the pod settings that a derive cannot express: bounded lists of
//! k8s-openapi types, and the label and annotation maps that may not set the hook's own keys.

use k8s_openapi::api::core::v1::{Affinity, LocalObjectReference};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::json;

use super::{
    AFFINITY_LISTS, AFFINITY_TERMS, CONTROLLER_UID_MESSAGE, CONTROLLER_UID_RULE,
    DNS_SUBDOMAIN_PATTERN, IMAGE_PULL_SECRETS, OWN_ANNOTATIONS_MESSAGE, OWN_ANNOTATIONS_RULE,
    OWN_LABELS_MESSAGE, OWN_LABELS_RULE,
};
use crate::api::bounds::{self, ANNOTATION_VALUE_LENGTH, LABEL_VALUE_LENGTH};

/// A pointer of [`AFFINITY_LISTS`] into the schema: `/a/b` → `/properties/a/properties/b`.
fn schema_pointer(path: &str) -> String {
    path.split('/')
        .skip(1)
        .fold(String::new(), |out, part| out + "/properties/" + part)
}

/// Removes every `description` below `value` (not its own).
fn drop_descriptions(value: &mut serde_json::Value) {
    let children: Vec<&mut serde_json::Value> = match value {
        serde_json::Value::Object(map) => map.values_mut().collect(),
        serde_json::Value::Array(items) => items.iter_mut().collect(),
        _ => Vec::new(),
    };
    for child in children {
        if let Some(map) = child.as_object_mut() {
            map.remove("description");
        }
        drop_descriptions(child);
    }
}

/// A label map that may not set the labels the hook writes (`podLabels`, `service.labels`).
pub fn own_labels_schema(_: &mut SchemaGenerator) -> Schema {
    bounds::string_map(LABEL_VALUE_LENGTH, &[(OWN_LABELS_RULE, OWN_LABELS_MESSAGE)])
}

/// A child's label map: neither the hook's labels nor Metacontroller's `controller-uid`
/// (`service.labels`).
pub fn child_labels_schema(_: &mut SchemaGenerator) -> Schema {
    let rules = [
        (OWN_LABELS_RULE, OWN_LABELS_MESSAGE),
        (CONTROLLER_UID_RULE, CONTROLLER_UID_MESSAGE),
    ];
    bounds::string_map(LABEL_VALUE_LENGTH, &rules)
}

/// A child's extra labels that may not set Metacontroller's `controller-uid`
/// (`serviceMonitor.additionalLabels`; the hook's labels win there).
pub fn metacontroller_labels_schema(_: &mut SchemaGenerator) -> Schema {
    let rules = [(CONTROLLER_UID_RULE, CONTROLLER_UID_MESSAGE)];
    bounds::string_map(LABEL_VALUE_LENGTH, &rules)
}

/// An annotation map that may not set keys under the hook's prefix (`podAnnotations`).
pub fn own_annotations_schema(_: &mut SchemaGenerator) -> Schema {
    let rules = [(OWN_ANNOTATIONS_RULE, OWN_ANNOTATIONS_MESSAGE)];
    bounds::string_map(ANNOTATION_VALUE_LENGTH, &rules)
}

/// k8s-openapi's `Affinity` schema with `maxItems` on each list of terms, without the nested
/// descriptions: they are Kubernetes' own (`kubectl explain pod.spec.affinity`), and they would
/// take a third of the CRD, which `kubectl apply` must fit into a 256 KiB annotation.
pub fn affinity_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = Affinity::json_schema(generator);
    if let Some(properties) = schema.get_mut("properties") {
        drop_descriptions(properties);
    }
    for path in AFFINITY_LISTS {
        if let Some(list) = schema
            .pointer_mut(&schema_pointer(path))
            .and_then(|l| l.as_object_mut())
        {
            list.insert("maxItems".to_owned(), json!(AFFINITY_TERMS));
        }
    }
    schema
}

/// A list of k8s-openapi's `LocalObjectReference` with `maxItems` and the Secret name's bounds.
pub fn image_pull_secrets_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = Vec::<LocalObjectReference>::json_schema(generator);
    schema.insert("maxItems".to_owned(), json!(IMAGE_PULL_SECRETS));
    if let Some(name) = schema
        .pointer_mut("/items/properties/name")
        .and_then(|n| n.as_object_mut())
    {
        name.insert("maxLength".to_owned(), json!(bounds::SECRET_NAME_LENGTH));
        name.insert("pattern".to_owned(), json!(DNS_SUBDOMAIN_PATTERN));
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_pointers() {
        assert_eq!(
            schema_pointer("/podAffinity/preferredDuringSchedulingIgnoredDuringExecution"),
            "/properties/podAffinity/properties/preferredDuringSchedulingIgnoredDuringExecution"
        );
    }
}
