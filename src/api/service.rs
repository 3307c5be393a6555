//! `spec.service`: settings of the headless Service.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds;
use super::check::{self, Out, Violation};
use super::pod::{self, MapKind};

/// All keys and values of `annotations` together, in bytes: half of the 256 KiB Kubernetes
/// allows for all annotations of an object, because Metacontroller's last-applied-configuration
/// annotation on the Service repeats them. Checked by the hook only (a CRD schema cannot sum a
/// map).
pub const ANNOTATIONS_TOTAL: usize = 128 * 1024;

/// Settings of the headless Service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// Annotations of the Service (replace the whole map; absent when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "bounds::annotations_schema")]
    pub annotations: Option<BTreeMap<String, String>>,

    /// Extra labels of the Service; the labels the hook writes (`app.kubernetes.io/name`,
    /// `instance`, `managed-by`, `version`) and Metacontroller's `controller-uid` cannot be set
    /// here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pod::child_labels_schema")]
    pub labels: Option<BTreeMap<String, String>>,

    /// List pods in DNS (A and SRV records) before they are ready and while a restarting pod is
    /// not ready, so that the server list clients hash keys onto keeps its length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub publish_not_ready_addresses: Option<bool>,
}

/// The Service settings with every default applied.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Service<'a> {
    /// Service annotations (never an empty map).
    pub annotations: Option<&'a BTreeMap<String, String>>,
    /// Service labels besides the hook's (never an empty map).
    pub labels: Option<&'a BTreeMap<String, String>>,
    /// Not-ready pods are published in DNS.
    pub publish_not_ready_addresses: bool,
}

impl<'a> Service<'a> {
    /// Resolves `spec.service`.
    #[must_use]
    pub fn of(service: Option<&'a ServiceSpec>) -> Self {
        Self {
            annotations: service
                .and_then(|s| s.annotations.as_ref())
                .filter(|a| !a.is_empty()),
            labels: service
                .and_then(|s| s.labels.as_ref())
                .filter(|l| !l.is_empty()),
            publish_not_ready_addresses: service
                .and_then(|s| s.publish_not_ready_addresses)
                .unwrap_or(false),
        }
    }
}

/// The schema rules of `spec.service`, and the total size of its annotations.
pub(super) fn validate(out: &mut Out, service: &ServiceSpec) {
    let labels = service.labels.as_ref();
    check::map(
        out,
        "spec.service.labels",
        labels,
        bounds::LABEL_VALUE_LENGTH,
    );
    let (kind, own) = (MapKind::Labels, pod::child_label);
    pod::check_entries(out, "spec.service.labels", labels, kind, own);
    let annotations = service.annotations.as_ref();
    let field = "spec.service.annotations";
    check::map(out, field, annotations, bounds::ANNOTATION_VALUE_LENGTH);
    let (kind, own) = (MapKind::Annotations, pod::child_annotation);
    pod::check_entries(out, field, annotations, kind, own);
    let total: usize = annotations
        .into_iter()
        .flatten()
        .map(|(key, value)| key.len() + value.len())
        .sum();
    if total > ANNOTATIONS_TOTAL {
        out.push(Violation {
            detail: format!(
                "may not be more than {ANNOTATIONS_TOTAL} bytes in total (keys and values), \
                 half of what Kubernetes allows: Metacontroller's last-applied-configuration \
                 annotation repeats them"
            ),
            ..Violation::too_long(field, ANNOTATIONS_TOTAL)
        });
    }
}
