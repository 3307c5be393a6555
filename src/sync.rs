//! `sync`: the one pure function behind `/sync`, `replay` and `render`.

use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;
use serde_json::value::RawValue;
use thiserror::Error;

use crate::api::effective::{Budget, Effective};
use crate::api::validation::{self, Violation};
use crate::api::{GROUP, KIND, VERSIONS};
use crate::children::deployment::TemplateAnnotations;
use crate::children::{ChildKind, deployment, hpa, network_policy, pdb, service, service_monitor};
use crate::hook::{
    Child, CustomizeRequest, CustomizeResponse, Parent, ResourceRule, SyncRequest, SyncResponse,
};
use crate::secrets;
use crate::status::{self, Inputs, PdbState};

/// Annotation that restarts the pods when changed.
pub const RESTART_TRIGGER: &str = "memcached.c5c3.io/restart-trigger";

/// Why a well-formed request gets no 200 answer. Each maps to a 4xx: Metacontroller then
/// changes nothing and shows the message as a Warning event.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SyncError {
    /// The parent is not a `memcached.c5c3.io` `Memcached` of a served version.
    #[error("parent is {kind} {api_version}, expected {KIND} {GROUP}/v1beta1 or {GROUP}/v1alpha1")]
    WrongParent {
        /// The parent's `apiVersion`.
        api_version: String,
        /// The parent's `kind`.
        kind: String,
    },
    /// The spec breaks a rule and the observed children cannot be kept as they are.
    #[error("invalid spec ({reason}): {}", validation::summary(.violations))]
    InvalidSpec {
        /// Why the observed children could not be kept.
        reason: &'static str,
        /// Every broken rule.
        violations: Vec<Violation>,
    },
}

impl SyncError {
    /// The JSON path of the field at fault.
    #[must_use]
    pub fn field(&self) -> &str {
        match self {
            Self::WrongParent { .. } => "parent.apiVersion",
            Self::InvalidSpec { violations, .. } => violations
                .first()
                .map_or("parent.spec", |v| v.field.as_str()),
        }
    }
}

fn check_parent(parent: &Parent) -> Result<(), SyncError> {
    let version_ok = parent
        .api_version
        .split_once('/')
        .is_some_and(|(group, version)| group == GROUP && VERSIONS.contains(&version));
    if version_ok && parent.kind == KIND {
        Ok(())
    } else {
        Err(SyncError::WrongParent {
            api_version: parent.api_version.clone(),
            kind: parent.kind.clone(),
        })
    }
}

/// The related Secrets Metacontroller should send with each sync: those of the enabled SASL
/// and TLS blocks, in the parent's namespace.
///
/// # Errors
/// [`SyncError::WrongParent`] for a parent of another kind or group.
pub fn customize(req: &CustomizeRequest) -> Result<CustomizeResponse, SyncError> {
    check_parent(&req.parent)?;
    // A name longer than any Secret's can only come from an invalid spec (the sync answer
    // reports it): asking Metacontroller to watch it would cost a lookup and find nothing.
    let mut names = secrets::referenced(&Effective::of(&req.parent.spec));
    names.retain(|name| !validation::is_too_long(name, crate::api::bounds::SECRET_NAME_LENGTH));
    let related_resources = if names.is_empty() {
        Vec::new()
    } else {
        vec![ResourceRule {
            api_version: "v1",
            resource: "secrets",
            namespace: req.parent.metadata.namespace.clone(),
            names: names.into_iter().map(str::to_owned).collect(),
        }]
    };
    Ok(CustomizeResponse { related_resources })
}

/// Formats the request time the way conditions carry it: RFC 3339, whole seconds, UTC.
#[must_use]
pub fn condition_time(now: Timestamp) -> String {
    Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

/// The identity of a last-applied configuration.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity<'a> {
    #[serde(borrow)]
    api_version: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    metadata: IdentityMeta<'a>,
}

#[derive(Deserialize)]
struct IdentityMeta<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<std::borrow::Cow<'a, str>>,
}

/// Observed children as this hook last desired them, when every one of them carries it and it
/// names that very child (a hand-edited annotation naming another object would make
/// Metacontroller delete the observed child and create a stranger).
fn kept_children(req: &SyncRequest, namespace: &str) -> Option<Vec<Child>> {
    if req.children.is_empty() {
        return None;
    }
    req.children
        .iter()
        .map(|child| {
            let text = child.last_applied()?;
            let raw = RawValue::from_string(text.to_owned()).ok()?;
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
            same.then_some(Child::Kept(raw))
        })
        .collect()
}

/// Computes the desired children and the status for one sync request at time `now`.
///
/// # Errors
/// [`SyncError::WrongParent`] for a parent of another kind or group; [`SyncError::InvalidSpec`]
/// for an invalid spec whose observed children cannot be kept (none observed, or one without
/// Metacontroller's last-applied annotation).
pub fn sync(req: &SyncRequest, now: Timestamp) -> Result<SyncResponse, SyncError> {
    sync_with_body(req, None, now)
}

/// [`sync`] of a request decoded from `body`: for an invalid spec whose observed children carry
/// no last-applied annotation (server-side apply), they are kept as their managed fields record
/// them ([`crate::hook::applied`]).
///
/// # Errors
/// As [`sync`].
pub fn sync_with_body(
    req: &SyncRequest,
    body: Option<&[u8]>,
    now: Timestamp,
) -> Result<SyncResponse, SyncError> {
    let parent = &req.parent;
    check_parent(parent)?;
    let name = parent.metadata.name.as_str();
    let namespace = parent.metadata.namespace.as_deref().unwrap_or_default();
    let spec = &parent.spec;
    let now = condition_time(now);
    let observed_deployment =
        req.children
            .find(ChildKind::Deployment.api_version(), "Deployment", name);
    let mut inputs = Inputs {
        name,
        namespace,
        generation: parent.metadata.generation,
        spec_replicas: spec.replicas,
        autoscaling: spec
            .autoscaling
            .as_ref()
            .is_some_and(|a| a.enabled == Some(true)),
        deployment: observed_deployment.map(|d| d.status),
        ..Inputs::default()
    };

    let e = Effective::of(spec);
    let declared = |kind: &ChildKind| req.controller.declares(kind.api_version(), kind.resource());
    let needed = needed_kinds(&e);
    inputs.missing_kinds = needed
        .iter()
        .filter(|k| !declared(k))
        .map(|k| (k.qualified_resource(), k.needed_by()))
        .collect();

    let violations = validation::validate(name, spec);
    if !violations.is_empty() {
        let kept = kept_children(req, namespace)
            .or_else(|| body.and_then(crate::hook::applied::kept_children));
        let Some(children) = kept else {
            let reason = if req.children.is_empty() {
                "no observed children to keep"
            } else {
                "an observed child has no last-applied configuration or server-side apply record of its own to keep"
            };
            return Err(SyncError::InvalidSpec { reason, violations });
        };
        inputs.invalid_spec = Some(validation::summary(&violations));
        // Judge the kept children against what they run, not against the rejected spec.
        inputs.autoscaling = false;
        inputs.spec_replicas =
            observed_deployment.map(|d| d.spec.replicas.or(d.status.replicas).unwrap_or(1));
        inputs.keep_previous = true;
        let status = status::build(&inputs, &parent.status.conditions, &now);
        return Ok(SyncResponse { children, status });
    }

    let (hash, missing_secrets) =
        secrets::hash_and_missing(&secrets::referenced(&e), &req.related, namespace);
    inputs.missing_secrets = missing_secrets;
    let mut children = Vec::with_capacity(needed.len());
    for kind in needed.iter().filter(|k| declared(k)) {
        children.push(match kind {
            ChildKind::Deployment => {
                let mut annotations = TemplateAnnotations::new();
                if let Some(hash) = &hash {
                    annotations.insert(secrets::SECRET_HASH.to_owned(), hash.clone());
                }
                if let Some(trigger) = parent
                    .metadata
                    .annotations
                    .restart_trigger
                    .as_deref()
                    .filter(|t| !t.is_empty())
                {
                    annotations.insert(RESTART_TRIGGER.to_owned(), trigger.to_owned());
                }
                let replicas =
                    deployment::replicas(&e, observed_deployment.and_then(|d| d.spec.replicas));
                Child::Deployment(Box::new(deployment::build(name, &e, replicas, annotations)))
            }
            ChildKind::Service => Child::Service(Box::new(service::build(name, &e))),
            ChildKind::PodDisruptionBudget => {
                let Some(budget) = &e.pdb else { continue };
                inputs.pdb = Some(pdb_state(name, budget, &e));
                Child::PodDisruptionBudget(Box::new(pdb::build(name, budget)))
            }
            ChildKind::HorizontalPodAutoscaler => {
                let Some(a) = &e.autoscaling else { continue };
                Child::HorizontalPodAutoscaler(Box::new(hpa::build(name, a)))
            }
            ChildKind::ServiceMonitor => {
                let Some(sm) = e
                    .monitoring
                    .as_ref()
                    .and_then(|m| m.service_monitor.as_ref())
                else {
                    continue;
                };
                Child::ServiceMonitor(Box::new(service_monitor::build(name, namespace, sm)))
            }
            ChildKind::NetworkPolicy => {
                let Some(sources) = e.network_policy else {
                    continue;
                };
                Child::NetworkPolicy(Box::new(network_policy::build(name, &e, sources)))
            }
        });
    }
    let status = status::build(&inputs, &parent.status.conditions, &now);
    Ok(SyncResponse { children, status })
}

/// The child kinds the effective spec asks for, in emission order.
fn needed_kinds(e: &Effective<'_>) -> Vec<ChildKind> {
    ChildKind::ALL
        .into_iter()
        .filter(|kind| match kind {
            ChildKind::Deployment | ChildKind::Service => true,
            ChildKind::PodDisruptionBudget => e.pdb.is_some(),
            ChildKind::HorizontalPodAutoscaler => e.autoscaling.is_some(),
            ChildKind::ServiceMonitor => e
                .monitoring
                .as_ref()
                .is_some_and(|m| m.service_monitor.is_some()),
            ChildKind::NetworkPolicy => e.network_policy.is_some(),
        })
        .collect()
}

/// The replica count a budget is judged at: the desired count, or under autoscaling the lowest
/// count the HPA may choose (spec.md §1.4a).
fn pdb_state(name: &str, budget: &Budget<'_>, e: &Effective<'_>) -> PdbState {
    let replicas = match &e.autoscaling {
        Some(a) => a.min_replicas.unwrap_or(1),
        None => e.replicas.unwrap_or(1),
    };
    PdbState {
        name: name.to_owned(),
        budget: pdb::describe(budget),
        replicas,
        allowed: pdb::disruptions_allowed(budget, replicas),
    }
}
