//! `spec.childMetadata`: labels and annotations on every object the hook creates for a
//! Memcached, as a chart's common labels are to its user (an admission policy that requires an
//! owner or cost-center label on every Deployment, budget or autoscaler then admits them).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds;
use super::check::{self, Out, Violation};
use super::pod::{self, MapKind};
use super::service::{ANNOTATIONS_TOTAL, ServiceSpec};

/// Labels and annotations of every child object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChildMetadataSpec {
    /// Labels on every child object (workloads, Service, budgets, autoscaler, NetworkPolicy,
    /// ServiceMonitor, ConfigMaps, ServiceAccount, RoleBinding), not on the pods (`podLabels`
    /// are theirs). The labels the hook writes (`app.kubernetes.io/name`, `instance`,
    /// `managed-by`, `version`) and Metacontroller's `controller-uid` cannot be set here;
    /// `service.labels` win on the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pod::child_labels_schema")]
    pub labels: Option<BTreeMap<String, String>>,

    /// Annotations on every child object, not on the pods (`podAnnotations` are theirs).
    /// Keys under `memcached.c5c3.io/` belong to the hook; `service.annotations` win on the
    /// Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pod::own_annotations_schema")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// `spec.childMetadata` with every default applied: the maps, never empty.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ChildMetadata<'a> {
    /// Labels of every child.
    pub labels: Option<&'a BTreeMap<String, String>>,
    /// Annotations of every child.
    pub annotations: Option<&'a BTreeMap<String, String>>,
}

impl<'a> ChildMetadata<'a> {
    /// Resolves `spec.childMetadata`.
    #[must_use]
    pub fn of(spec: Option<&'a ChildMetadataSpec>) -> Self {
        Self {
            labels: spec
                .and_then(|s| s.labels.as_ref())
                .filter(|l| !l.is_empty()),
            annotations: spec
                .and_then(|s| s.annotations.as_ref())
                .filter(|a| !a.is_empty()),
        }
    }
}

/// The keys and values of `map` together, in bytes.
fn size(map: Option<&BTreeMap<String, String>>) -> usize {
    map.into_iter()
        .flatten()
        .map(|(key, value)| key.len() + value.len())
        .sum()
}

/// The schema rules of `spec.childMetadata`, and the size of its annotations together with the
/// Service's own (both land on the Service, and Metacontroller's last-applied annotation
/// repeats them).
pub(super) fn validate(out: &mut Out, meta: &ChildMetadataSpec, service: Option<&ServiceSpec>) {
    let field = "spec.childMetadata.labels";
    let labels = meta.labels.as_ref();
    check::map(out, field, labels, bounds::LABEL_VALUE_LENGTH);
    pod::check_entries(out, field, labels, MapKind::Labels, pod::child_label);
    let field = "spec.childMetadata.annotations";
    let annotations = meta.annotations.as_ref();
    check::map(out, field, annotations, bounds::ANNOTATION_VALUE_LENGTH);
    let own = |key: &str| pod::child_annotation(key).or_else(|| pod::own_annotation(key));
    pod::check_entries(out, field, annotations, MapKind::Annotations, own);
    let total = size(annotations) + size(service.and_then(|s| s.annotations.as_ref()));
    if annotations.is_some() && total > ANNOTATIONS_TOTAL {
        out.push(Violation {
            detail: format!(
                "may not be more than {ANNOTATIONS_TOTAL} bytes in total (keys and values) \
                 together with spec.service.annotations, half of what Kubernetes allows on the \
                 Service: Metacontroller's last-applied-configuration annotation repeats them"
            ),
            ..Violation::too_long(field, ANNOTATIONS_TOTAL)
        });
    }
}
