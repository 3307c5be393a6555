//! `sync`: the one pure function behind `/sync`, `replay` and `render`.

use k8s_openapi::Resource as _;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;
use serde_json::value::RawValue;
use thiserror::Error;

use crate::api::effective::Effective;
use crate::api::high_availability::Budget;
use crate::api::validation::{self, Violation};
use crate::api::{GROUP, KIND, VERSIONS};
use crate::children::deployment::Rollers;
use crate::children::{
    ChildKind, deployment, hpa, network_policy, pdb, ports, service, service_monitor,
};
use crate::hook::{
    Child, CustomizeRequest, CustomizeResponse, Parent, ResourceRule, SyncRequest, SyncResponse,
};
use crate::secrets;
use crate::status::{self, Inputs, PdbState};

pub use crate::children::deployment::RESTART_TRIGGER;

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
    let mut names = Effective::of(&req.parent.spec).security.secrets();
    names.retain(|name| !validation::is_too_long(name, crate::api::bounds::SECRET_NAME_LENGTH));
    let related_resources = if names.is_empty() {
        Vec::new()
    } else {
        vec![ResourceRule {
            api_version: Secret::API_VERSION,
            resource: Secret::URL_PATH_SEGMENT,
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
            same.then_some(Child::Kept(raw))
        })
        .collect()
}

/// What a sync built, all the status needs to know about it.
#[derive(Default)]
struct Outcome {
    /// The emitted PDB, if any.
    pdb: Option<PdbState>,
    /// Referenced Secrets not found among the related objects.
    missing_secrets: Vec<String>,
    /// Kinds the spec needs that the CompositeController does not declare.
    missing_kinds: Vec<(String, &'static str)>,
    /// The summary of an invalid spec whose observed children were kept.
    invalid_spec: Option<String>,
}

/// Why an invalid spec cannot keep the observed children.
const NOTHING_TO_KEEP: &str = "no observed children to keep";
/// Why an invalid spec cannot keep the observed children.
const CHILD_WITHOUT_LAST_APPLIED: &str =
    "an observed child has no last-applied configuration of its own to keep";

/// Computes the desired children and the status for one sync request at time `now`.
///
/// # Errors
/// [`SyncError::WrongParent`] for a parent of another kind or group; [`SyncError::InvalidSpec`]
/// for an invalid spec whose observed children cannot be kept (none observed, or one without
/// Metacontroller's last-applied annotation).
pub fn sync(req: &SyncRequest, now: Timestamp) -> Result<SyncResponse, SyncError> {
    let parent = &req.parent;
    check_parent(parent)?;
    let name = parent.metadata.name.as_str();
    let namespace = parent.metadata.namespace.as_deref().unwrap_or_default();
    let e = Effective::of(&parent.spec);
    let needed = needed_kinds(&e);
    let declared = |kind: &ChildKind| req.controller.declares(kind.api_version(), kind.resource());
    let missing_kinds = needed
        .iter()
        .filter(|k| !declared(k))
        .map(|k| (k.qualified_resource(), k.needed_by()))
        .collect();
    let violations = validation::validate_effective(name, &parent.spec, &e);
    let (children, outcome) = if violations.is_empty() {
        let declared: Vec<ChildKind> = needed.into_iter().filter(|k| declared(k)).collect();
        desired(req, &e, &declared)
    } else {
        let Some(children) = kept_children(req, namespace) else {
            let reason = if req.children.is_empty() {
                NOTHING_TO_KEEP
            } else {
                CHILD_WITHOUT_LAST_APPLIED
            };
            return Err(SyncError::InvalidSpec { reason, violations });
        };
        let invalid_spec = Some(validation::summary(&violations));
        (
            children,
            Outcome {
                invalid_spec,
                ..Outcome::default()
            },
        )
    };
    let outcome = Outcome {
        missing_kinds,
        ..outcome
    };
    let inputs = inputs(req, &e, outcome);
    let status = status::build(&inputs, &parent.status.conditions, &condition_time(now));
    Ok(SyncResponse { children, status })
}

/// The status inputs of a sync that built `outcome`.
fn inputs<'a>(req: &'a SyncRequest, e: &Effective<'_>, outcome: Outcome) -> Inputs<'a> {
    let parent = &req.parent;
    let name = parent.metadata.name.as_str();
    let observed = req.children.find(
        ChildKind::Deployment.api_version(),
        ChildKind::Deployment.kind(),
        name,
    );
    // Kept children are judged against what they run, not against the rejected spec.
    let kept = outcome.invalid_spec.is_some();
    let spec_replicas = if kept {
        observed.map(|d| d.spec.replicas.or(d.status.replicas).unwrap_or(1))
    } else {
        parent.spec.replicas
    };
    Inputs {
        name,
        namespace: parent.metadata.namespace.as_deref().unwrap_or_default(),
        generation: parent.metadata.generation,
        spec_replicas,
        autoscaling: !kept && e.autoscaling.is_some(),
        deployment: observed.map(|d| d.status),
        missing_secrets: outcome.missing_secrets,
        invalid_spec: outcome.invalid_spec,
        pdb: outcome.pdb,
        missing_kinds: outcome.missing_kinds,
        keep_previous: kept,
    }
}

/// The desired children of the `kinds` a valid spec asks for, and what they are.
fn desired(req: &SyncRequest, e: &Effective<'_>, kinds: &[ChildKind]) -> (Vec<Child>, Outcome) {
    let parent = &req.parent;
    let name = parent.metadata.name.as_str();
    let namespace = parent.metadata.namespace.as_deref().unwrap_or_default();
    let (hash, missing_secrets) =
        secrets::hash_and_missing(&e.security.secrets(), &req.related, namespace);
    let served = ports::served(e);
    let mut outcome = Outcome {
        missing_secrets,
        ..Outcome::default()
    };
    let mut children = Vec::with_capacity(kinds.len());
    for kind in kinds {
        children.push(match kind {
            ChildKind::Deployment => {
                let rollers = Rollers {
                    secret_hash: hash.as_deref(),
                    restart_trigger: parent.metadata.annotations.restart_trigger.as_deref(),
                };
                let observed = req.children.find(kind.api_version(), kind.kind(), name);
                let replicas = deployment::replicas(e, observed.and_then(|d| d.spec.replicas));
                let deployment = deployment::build(name, e, &served, replicas, rollers);
                Child::Deployment(Box::new(deployment))
            }
            ChildKind::Service => Child::Service(Box::new(service::build(name, e, &served))),
            ChildKind::PodDisruptionBudget => {
                let Some(budget) = &e.high_availability.pdb else {
                    continue;
                };
                outcome.pdb = Some(pdb_state(name, budget, e));
                Child::PodDisruptionBudget(Box::new(pdb::build(name, budget)))
            }
            ChildKind::HorizontalPodAutoscaler => {
                let Some(a) = &e.autoscaling else { continue };
                Child::HorizontalPodAutoscaler(Box::new(hpa::build(name, a)))
            }
            ChildKind::ServiceMonitor => {
                let monitor = e
                    .monitoring
                    .as_ref()
                    .and_then(|m| m.service_monitor.as_ref());
                let Some(sm) = monitor else { continue };
                Child::ServiceMonitor(Box::new(service_monitor::build(name, namespace, sm)))
            }
            ChildKind::NetworkPolicy => {
                let Some(sources) = e.security.network_policy else {
                    continue;
                };
                let policy = network_policy::build(name, &served, sources);
                Child::NetworkPolicy(Box::new(policy))
            }
        });
    }
    (children, outcome)
}

/// The child kinds the effective spec asks for, in emission order.
fn needed_kinds(e: &Effective<'_>) -> Vec<ChildKind> {
    ChildKind::ALL
        .into_iter()
        .filter(|kind| match kind {
            ChildKind::Deployment | ChildKind::Service => true,
            ChildKind::PodDisruptionBudget => e.high_availability.pdb.is_some(),
            ChildKind::HorizontalPodAutoscaler => e.autoscaling.is_some(),
            ChildKind::ServiceMonitor => e
                .monitoring
                .as_ref()
                .is_some_and(|m| m.service_monitor.is_some()),
            ChildKind::NetworkPolicy => e.security.network_policy.is_some(),
        })
        .collect()
}

/// The replica count a budget is judged at: the desired count, or under autoscaling the lowest
/// count the HPA may choose.
fn pdb_state(name: &str, budget: &Budget<'_>, e: &Effective<'_>) -> PdbState {
    let replicas = match &e.autoscaling {
        Some(a) => a.lowest_replicas(),
        None => e.replicas.unwrap_or(1),
    };
    PdbState {
        name: name.to_owned(),
        budget: pdb::describe(budget),
        replicas,
        allowed: pdb::disruptions_allowed(budget, replicas),
    }
}
