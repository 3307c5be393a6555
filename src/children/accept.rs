//! What the cluster checks of a desired child, checked before the hook answers: a 200 means
//! children the API server and Metacontroller accept. The spec checks (`api::validation`) refuse
//! what a user can get wrong, at the field of the spec; this checks the children the builders
//! made of a valid spec, by the API server's own rules ([`crate::api::apiserver`]):
//!
//! - names: a DNS-1123 subdomain, a DNS-1035 label for the Service, and a StatefulSet's short
//!   enough for its pods' `controller-revision-hash` label;
//! - label keys and values, annotation keys; no `controller-uid` label and no last-applied
//!   annotation (Metacontroller's own);
//! - the annotations as stored: the child's own plus Metacontroller's copy of the whole child in
//!   its last-applied annotation, as Go encodes it, within the API server's 256 KiB;
//! - every container's image: present, no surrounding whitespace, no control character;
//! - in what is copied from Kubernetes types the CRD cannot check further: label selectors,
//!   node selector requirements, topology keys and tolerations ([`selectors`]).
//!
//! A violation makes the sync an invalid spec: the observed children are kept.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::apiserver::STATEFULSET_NAME_LENGTH;
use crate::api::apiserver::{self, ANNOTATIONS_TOTAL, CONTROLLER_UID, LAST_APPLIED};
use crate::api::validation::{Violation, quoted};
use crate::hook::Child;
use path::Path;

/// Room left for what Metacontroller adds to its copy of a child (the `controller-uid` label,
/// the namespace) and for the annotations the cluster adds (the Deployment controller's
/// `deployment.kubernetes.io/revision`, copied with the last-applied annotation to each
/// ReplicaSet with a few more of its own).
pub const CLUSTER_RESERVE: usize = 1024;

/// Every rule the desired `children` break, by the API server's and Metacontroller's rules.
#[must_use]
pub fn check(children: &[Child]) -> Vec<Violation> {
    let mut out = Vec::new();
    for child in children {
        let Some((kind, meta, template)) = parts(child) else {
            continue;
        };
        let name = meta.name.as_deref().unwrap_or_default();
        let at = Path::child(kind, name);
        check_name(&mut out, kind, name, &at);
        check_meta(&mut out, meta, &at.at("metadata"));
        let stored = stored_annotations(child, meta);
        if stored > ANNOTATIONS_TOTAL {
            out.push(Violation {
                detail: format!(
                    "may not be more than {ANNOTATIONS_TOTAL} bytes in total as stored: \
                     {stored} with Metacontroller's last-applied-configuration copy of the \
                     {kind} (Go's JSON encoding writes <, > and & as 6 bytes each)"
                ),
                ..Violation::too_long(at.at("metadata.annotations").to_string(), ANNOTATIONS_TOTAL)
            });
        }
        if let Some(template) = template {
            check_template(&mut out, template, &at.at("spec.template"));
        }
        if let Child::NetworkPolicy(policy) = child {
            selectors::network_policy(&mut out, &at, policy);
        }
    }
    out
}

/// A child's kind, metadata and pod template; `None` for a kept child (it is the cluster's).
fn parts(child: &Child) -> Option<(&'static str, &ObjectMeta, Option<&PodTemplateSpec>)> {
    Some(match child {
        Child::Deployment(d) => (
            "Deployment",
            &d.metadata,
            d.spec.as_ref().map(|s| &s.template),
        ),
        Child::StatefulSet(s) => (
            "StatefulSet",
            &s.metadata,
            s.spec.as_ref().map(|s| &s.template),
        ),
        Child::Service(s) => ("Service", &s.metadata, None),
        Child::PodDisruptionBudget(p) => ("PodDisruptionBudget", &p.metadata, None),
        Child::HorizontalPodAutoscaler(h) => ("HorizontalPodAutoscaler", &h.metadata, None),
        Child::ServiceMonitor(m) => ("ServiceMonitor", &m.metadata, None),
        Child::NetworkPolicy(n) => ("NetworkPolicy", &n.metadata, None),
        Child::ConfigMap(c) => ("ConfigMap", &c.metadata, None),
        Child::ServiceAccount(a) => ("ServiceAccount", &a.metadata, None),
        Child::RoleBinding(b) => ("RoleBinding", &b.metadata, None),
        Child::Kept(_) => return None,
    })
}

/// The bytes of a child's annotations once Metacontroller's dynamic apply stored it: its own
/// annotations, the last-applied annotation holding the whole child as Go encodes it, and
/// [`CLUSTER_RESERVE`].
#[must_use]
pub fn stored_annotations(child: &Child, meta: &ObjectMeta) -> usize {
    let own = apiserver::annotations_size(meta.annotations.iter().flatten());
    own + LAST_APPLIED.len() + apiserver::go_json_len(child) + CLUSTER_RESERVE
}

fn check_name(out: &mut Vec<Violation>, kind: &str, name: &str, at: &Path<'_>) {
    let detail = match kind {
        "Service" if !apiserver::is_dns1035_label(name) => "must be a DNS-1035 label",
        _ if !apiserver::is_dns_subdomain(name) => "must be a DNS-1123 subdomain",
        "StatefulSet" if name.len() > STATEFULSET_NAME_LENGTH => {
            "must be at most 52 characters: each pod's controller-revision-hash label is \
             <name>-<10 characters>"
        }
        _ => return,
    };
    let field = at.at("metadata.name").to_string();
    out.push(Violation::invalid(field, quoted(name), detail));
}

/// Label keys and values and annotation keys, with Metacontroller's own keys refused.
fn check_meta(out: &mut Vec<Violation>, meta: &ObjectMeta, at: &Path<'_>) {
    for (key, value) in meta.labels.iter().flatten() {
        let detail = if key == CONTROLLER_UID {
            "may not be set: Metacontroller's generated selector owns it"
        } else if !apiserver::is_qualified_name(key) {
            "must be a qualified name"
        } else if !apiserver::is_label_value(value) {
            "must be a label value"
        } else {
            continue;
        };
        let field = at.at("labels").to_string();
        out.push(Violation::invalid(field, quoted(key), detail));
    }
    for key in meta.annotations.iter().flatten().map(|(key, _)| key) {
        let detail = if key == LAST_APPLIED {
            "may not be set: Metacontroller stores the child there"
        } else if !apiserver::is_qualified_name(key) {
            "must be a qualified name"
        } else {
            continue;
        };
        let field = at.at("annotations").to_string();
        out.push(Violation::invalid(field, quoted(key), detail));
    }
}

/// The pods' labels and annotation keys and each container's image. The size of the pods'
/// annotations needs no check of its own: the workload's last-applied copy holds them all.
fn check_template(out: &mut Vec<Violation>, template: &PodTemplateSpec, at: &Path<'_>) {
    if let Some(meta) = &template.metadata {
        for (key, value) in meta.labels.iter().flatten() {
            if !apiserver::is_qualified_name(key) || !apiserver::is_label_value(value) {
                let detail = "must be a qualified name with a label value";
                let field = at.at("metadata.labels").to_string();
                out.push(Violation::invalid(field, quoted(key), detail));
            }
        }
        for key in meta.annotations.iter().flatten().map(|(key, _)| key) {
            if !apiserver::is_qualified_name(key) {
                let field = at.at("metadata.annotations").to_string();
                out.push(Violation::invalid(
                    field,
                    quoted(key),
                    "must be a qualified name",
                ));
            }
        }
    }
    let Some(spec) = &template.spec else { return };
    let at = at.at("spec");
    selectors::pod_spec(out, &at, spec);
    let init = spec.init_containers.iter().flatten();
    let containers = at.at("containers");
    for container in spec.containers.iter().chain(init) {
        let image = container.image.as_deref().unwrap_or_default();
        let field = || containers.named(&container.name).at("image").to_string();
        if image.is_empty() {
            out.push(Violation::required(field(), "an image is required"));
        } else if let Some(detail) = apiserver::image_error(image) {
            out.push(Violation::invalid(field(), quoted(image), detail));
        }
    }
}

mod path;
mod selectors;
#[cfg(test)]
mod tests;
