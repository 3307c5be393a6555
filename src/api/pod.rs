//! The pods' placement and metadata: `nodeSelector`, `tolerations`, `affinity`,
//! `priorityClassName`, `imagePullSecrets`, `podLabels`, `podAnnotations`, and the Service's
//! `service.labels`: their bounds, the keys the hook keeps for itself, the schema pieces a
//! derive cannot express, and the checks the hook repeats.
//!
//! Label and annotation keys and label values are also checked for Kubernetes' syntax: a CRD
//! schema cannot constrain map keys beyond their length, and a key the API server refuses in
//! the workload would fail every sync.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, LocalObjectReference, Toleration};

mod schema;

pub use schema::{
    affinity_schema, child_labels_schema, image_pull_secrets_schema, metacontroller_labels_schema,
    own_annotations_schema, own_labels_schema,
};

use super::MemcachedSpec;
use super::apiserver::{
    CONTROLLER_UID, LAST_APPLIED, is_dns_subdomain, is_label_value, is_qualified_name,
};
use super::bounds;
use super::bounds::{ANNOTATION_VALUE_LENGTH, LABEL_VALUE_LENGTH};
use super::check::{self, Out, Violation, is_too_long, quoted};

/// Entries of `tolerations`: a dedicated pool needs one or two, GPU or spot pools a handful.
pub const TOLERATIONS: usize = 32;
/// Terms in each list of `affinity` (one per rule; also bounds the scheduler's work).
pub const AFFINITY_TERMS: usize = 16;
/// Entries of `imagePullSecrets`: one per registry.
pub const IMAGE_PULL_SECRETS: usize = 16;
/// All keys and values of `podAnnotations` together, in bytes: a quarter of the 256 KiB
/// Kubernetes allows for an object's annotations, because Metacontroller's
/// last-applied-configuration annotation on the workload repeats the whole pod template
/// (with up to 64 KiB of `extraArgs`). Checked by the hook only (a CRD schema cannot sum a map).
pub const POD_ANNOTATIONS_TOTAL: usize = 64 * 1024;
/// A DNS-1123 subdomain (PriorityClass and Secret names), at most
/// [`bounds::SECRET_NAME_LENGTH`] characters.
pub const DNS_SUBDOMAIN_PATTERN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// The labels the hook writes on the pods and the Service: never set by `podLabels` or
/// `service.labels` (the first three are the immutable selector).
pub const OWN_LABELS: [&str; 4] = [
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
];
/// The CEL rule refusing [`OWN_LABELS`] as keys: four map lookups, whose cost the API server
/// estimates as constant (a rule that compares every key would be charged for the longest key
/// a request could hold, since a CRD schema cannot bound map keys).
pub const OWN_LABELS_RULE: &str = "!('app.kubernetes.io/name' in self) && !('app.kubernetes.io/instance' in self) && !('app.kubernetes.io/managed-by' in self) && !('app.kubernetes.io/version' in self)";
/// The message of [`OWN_LABELS_RULE`], also the hook's.
pub const OWN_LABELS_MESSAGE: &str = "may not set the labels the hook owns (app.kubernetes.io/name, app.kubernetes.io/instance, app.kubernetes.io/managed-by, app.kubernetes.io/version)";
/// The prefix of the hook's own pod annotations (`secret-hash`, `restart-trigger`).
pub const OWN_ANNOTATION_PREFIX: &str = "memcached.c5c3.io/";
/// The CEL rule refusing keys under [`OWN_ANNOTATION_PREFIX`].
pub const OWN_ANNOTATIONS_RULE: &str = "self.all(k, !k.startsWith('memcached.c5c3.io/'))";
/// The message of [`OWN_ANNOTATIONS_RULE`], also the hook's.
pub const OWN_ANNOTATIONS_MESSAGE: &str =
    "may not set annotations under memcached.c5c3.io/, the hook's own prefix";

/// The pods' placement and metadata as the pod template gets them: empty lists, maps and
/// strings left out (the API server would drop them, and Metacontroller would then see a
/// difference on every sync).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pod<'a> {
    /// `nodeSelector`.
    pub node_selector: Option<&'a BTreeMap<String, String>>,
    /// `tolerations`.
    pub tolerations: Option<&'a [Toleration]>,
    /// `affinity` as given (the pod template builder drops empty parts and lists, and lets its
    /// `podAntiAffinity` replace the preset's).
    pub affinity: Option<&'a Affinity>,
    /// `priorityClassName`.
    pub priority_class_name: Option<&'a str>,
    /// `imagePullSecrets`.
    pub image_pull_secrets: Option<&'a [LocalObjectReference]>,
    /// `podLabels`, added to the hook's pod labels.
    pub labels: Option<&'a BTreeMap<String, String>>,
    /// `podAnnotations`, added to the hook's pod annotations.
    pub annotations: Option<&'a BTreeMap<String, String>>,
}

impl<'a> Pod<'a> {
    /// The pod settings of `spec`.
    #[must_use]
    pub fn of(spec: &'a MemcachedSpec) -> Self {
        let map = |m: &'a Option<BTreeMap<String, String>>| m.as_ref().filter(|m| !m.is_empty());
        Self {
            node_selector: map(&spec.node_selector),
            tolerations: spec.tolerations.as_deref().filter(|t| !t.is_empty()),
            affinity: spec.affinity.as_ref(),
            priority_class_name: spec
                .priority_class_name
                .as_deref()
                .filter(|p| !p.is_empty()),
            image_pull_secrets: spec.image_pull_secrets.as_deref().filter(|s| !s.is_empty()),
            labels: map(&spec.pod_labels),
            annotations: map(&spec.pod_annotations),
        }
    }
}

/// The lists of terms in an `Affinity`, as JSON pointers below it.
pub(crate) const AFFINITY_LISTS: [&str; 6] = [
    "/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
    "/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution",
    "/podAffinity/requiredDuringSchedulingIgnoredDuringExecution",
    "/podAffinity/preferredDuringSchedulingIgnoredDuringExecution",
    "/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution",
    "/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution",
];

const KEY_SYNTAX: &str = "must be a qualified name: an optional DNS subdomain prefix and '/', then at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character";
const VALUE_SYNTAX: &str = "must be a label value: empty or at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character";
const SUBDOMAIN_SYNTAX: &str = "must be a DNS-1123 subdomain: lower-case alphanumeric characters, '-' and '.', each dot-separated part starting and ending with an alphanumeric character";

/// What a map holds: labels (keys and values checked) or annotations (keys only).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    /// Label keys and label values.
    Labels,
    /// Label keys, free values.
    Annotations,
}

/// The syntax of the entries of a label or annotation map that are within its bounds (the
/// bounds themselves are `check::map`'s), and the keys the hook keeps for itself.
/// One violation per entry; over-long keys and values are left to the bounds.
pub fn check_entries(
    out: &mut Out,
    field: &str,
    map: Option<&BTreeMap<String, String>>,
    kind: MapKind,
    own: fn(&str) -> Option<&'static str>,
) {
    for (key, value) in map.into_iter().flatten().take(bounds::MAP_ENTRIES) {
        if is_too_long(key, bounds::KEY_LENGTH) {
            continue;
        }
        if let Some(message) = own(key) {
            out.push(Violation::invalid(field, quoted(key), message));
        } else if !is_qualified_name(key) {
            out.push(Violation::invalid(field, quoted(key), KEY_SYNTAX));
        } else if kind == MapKind::Labels
            && !is_too_long(value, LABEL_VALUE_LENGTH)
            && !is_label_value(value)
        {
            out.push(Violation::invalid(
                format!("{field}.{key}"),
                quoted(value),
                VALUE_SYNTAX,
            ));
        }
    }
}

/// [`OWN_LABELS_MESSAGE`] for a label the hook writes.
#[must_use]
pub fn own_label(key: &str) -> Option<&'static str> {
    OWN_LABELS.contains(&key).then_some(OWN_LABELS_MESSAGE)
}

/// Why a child's labels may not set [`CONTROLLER_UID`].
pub const CONTROLLER_UID_MESSAGE: &str = "may not set controller-uid, the label of Metacontroller's generated selector: Metacontroller adds it to every child itself, and any other value fails every sync";
/// The CEL rule refusing [`CONTROLLER_UID`] as a key (one map lookup).
pub const CONTROLLER_UID_RULE: &str = "!('controller-uid' in self)";
/// A Secret's name: empty (the CRD's default, refused when the block is enabled) or a DNS-1123
/// subdomain.
pub const SECRET_NAME_PATTERN: &str =
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$";
/// Why a child's annotations may not set [`LAST_APPLIED`].
pub const LAST_APPLIED_MESSAGE: &str = "may not set metacontroller.k8s.io/last-applied-configuration: Metacontroller stores the child there itself";

/// [`CONTROLLER_UID_MESSAGE`] for the label Metacontroller owns (`serviceMonitor.additionalLabels`).
#[must_use]
pub fn metacontroller_label(key: &str) -> Option<&'static str> {
    (key == CONTROLLER_UID).then_some(CONTROLLER_UID_MESSAGE)
}

/// The labels of a child's metadata the hook or Metacontroller writes (`service.labels`).
#[must_use]
pub fn child_label(key: &str) -> Option<&'static str> {
    own_label(key).or_else(|| metacontroller_label(key))
}

/// [`LAST_APPLIED_MESSAGE`] for the annotation Metacontroller owns (`service.annotations`).
#[must_use]
pub fn child_annotation(key: &str) -> Option<&'static str> {
    (key == LAST_APPLIED).then_some(LAST_APPLIED_MESSAGE)
}

/// [`OWN_ANNOTATIONS_MESSAGE`] for a key under the hook's prefix.
#[must_use]
pub fn own_annotation(key: &str) -> Option<&'static str> {
    key.starts_with(OWN_ANNOTATION_PREFIX)
        .then_some(OWN_ANNOTATIONS_MESSAGE)
}

/// No key is the hook's own (`nodeSelector`).
#[must_use]
pub fn no_own_key(_: &str) -> Option<&'static str> {
    None
}

/// A name that must be a DNS-1123 subdomain (`priorityClassName`, a Secret's name).
pub fn check_subdomain(out: &mut Out, field: &str, name: Option<&str>) {
    let Some(name) = name else { return };
    if is_too_long(name, bounds::SECRET_NAME_LENGTH) {
        out.push(Violation::too_long(field, bounds::SECRET_NAME_LENGTH));
    } else if !is_dns_subdomain(name) {
        out.push(Violation::invalid(field, quoted(name), SUBDOMAIN_SYNTAX));
    }
}

/// Each list of terms of `affinity` within [`AFFINITY_TERMS`].
pub fn check_affinity(out: &mut Out, affinity: Option<&Affinity>) {
    let Some(a) = affinity else { return };
    let node = a.node_affinity.as_ref();
    let pod = a.pod_affinity.as_ref();
    let anti = a.pod_anti_affinity.as_ref();
    let counts = [
        node.and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|r| r.node_selector_terms.len()),
        node.and_then(|n| {
            n.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(Vec::len),
        pod.and_then(|p| {
            p.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(Vec::len),
        pod.and_then(|p| {
            p.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(Vec::len),
        anti.and_then(|p| {
            p.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(Vec::len),
        anti.and_then(|p| {
            p.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(Vec::len),
    ];
    for (path, count) in AFFINITY_LISTS.iter().zip(counts) {
        if let Some(count) = count.filter(|c| *c > AFFINITY_TERMS) {
            let field = format!("spec.affinity{}", path.replace('/', "."));
            out.push(Violation::too_many(field, count, AFFINITY_TERMS));
        }
    }
}

/// The pod settings' bounds, syntax and the hook's own keys.
pub(super) fn validate(out: &mut Out, spec: &MemcachedSpec) {
    let selector = spec.node_selector.as_ref();
    check::map(out, "spec.nodeSelector", selector, LABEL_VALUE_LENGTH);
    check_entries(
        out,
        "spec.nodeSelector",
        selector,
        MapKind::Labels,
        no_own_key,
    );
    check::bounded(out, "spec.tolerations", spec.tolerations.as_ref());
    check_affinity(out, spec.affinity.as_ref());
    let priority = spec.priority_class_name.as_deref();
    check_subdomain(out, "spec.priorityClassName", priority);
    let field = "spec.imagePullSecrets";
    let pull = spec.image_pull_secrets.as_deref();
    for (index, secret) in check::items(out, field, pull, IMAGE_PULL_SECRETS)
        .iter()
        .enumerate()
    {
        let name = format!("{field}[{index}].name");
        check_subdomain(out, &name, Some(&secret.name));
    }
    let labels = spec.pod_labels.as_ref();
    check::map(out, "spec.podLabels", labels, LABEL_VALUE_LENGTH);
    check_entries(out, "spec.podLabels", labels, MapKind::Labels, own_label);
    let annotations = spec.pod_annotations.as_ref();
    let field = "spec.podAnnotations";
    check::map(out, field, annotations, ANNOTATION_VALUE_LENGTH);
    check_entries(
        out,
        field,
        annotations,
        MapKind::Annotations,
        own_annotation,
    );
    let total: usize = annotations
        .into_iter()
        .flatten()
        .map(|(key, value)| key.len() + value.len())
        .sum();
    if total > POD_ANNOTATIONS_TOTAL {
        out.push(Violation {
            detail: format!(
                "may not be more than {POD_ANNOTATIONS_TOTAL} bytes in total (keys and \
                 values), a quarter of what Kubernetes allows: Metacontroller's \
                 last-applied-configuration annotation on the workload repeats the pod template"
            ),
            ..Violation::too_long(field, POD_ANNOTATIONS_TOTAL)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_name_pattern_is_the_subdomain_pattern_or_empty() {
        assert_eq!(
            SECRET_NAME_PATTERN,
            format!(
                "^({})?$",
                &DNS_SUBDOMAIN_PATTERN[1..DNS_SUBDOMAIN_PATTERN.len() - 1]
            )
        );
        assert!(CONTROLLER_UID_RULE.contains(&format!("'{CONTROLLER_UID}'")));
        assert!(CONTROLLER_UID_MESSAGE.contains(CONTROLLER_UID));
    }

    #[test]
    fn the_rules_name_the_keys_the_hook_checks() {
        for key in OWN_LABELS {
            assert!(OWN_LABELS_RULE.contains(&format!("'{key}'")));
            assert!(OWN_LABELS_MESSAGE.contains(key));
        }
        assert!(OWN_ANNOTATIONS_RULE.contains(&format!("'{OWN_ANNOTATION_PREFIX}'")));
        assert!(OWN_ANNOTATIONS_MESSAGE.contains(OWN_ANNOTATION_PREFIX));
    }
}
