//! The parent's status: conditions, `readyReplicas`, `serverList` (docs/behaviour.md).
//!
//! Conditions are computed from the *observed* Deployment, then merged into the parent's
//! current conditions by type: `lastTransitionTime` is carried over while a condition's status
//! does not change, so the status is a deterministic function of the request and Metacontroller
//! does not sync again and again.

use crate::api::{Condition, MemcachedStatus};
use crate::children::{ChildKind, discovery, ports, statefulset};
use crate::hook::ChildStatus;

/// Condition type `Available`.
pub const AVAILABLE: &str = "Available";
/// Condition type `Progressing`.
pub const PROGRESSING: &str = "Progressing";
/// Condition type `Degraded`.
pub const DEGRADED: &str = "Degraded";
/// Condition type `Ready`.
pub const READY: &str = "Ready";
/// Condition type `DisruptionBudgetBlocking`.
pub const DISRUPTION_BUDGET_BLOCKING: &str = "DisruptionBudgetBlocking";
/// Condition type `ChildResourcesMissing`.
pub const CHILD_RESOURCES_MISSING: &str = "ChildResourcesMissing";
/// Condition type: whether SASL/TLS Secret changes are reloaded in place.
pub const SECRET_RELOAD: &str = "SecretReload";

/// Condition type: whether the pods keep their cache across restarts, and what discards it.
pub const WARM_RESTART: &str = "WarmRestart";

/// A condition the sync computes from the spec (`SecretReload`, `WarmRestart`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpecCondition {
    /// The condition's status.
    pub status: bool,
    /// The condition's reason.
    pub reason: &'static str,
    /// The condition's message.
    pub message: String,
}
/// Reason of `Progressing` while the workload is switched between Deployment and StatefulSet.
pub const WORKLOAD_MIGRATION: &str = "WorkloadMigration";

/// What a PDB as built allows (for `DisruptionBudgetBlocking`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PdbState {
    /// Name of the PDB.
    pub name: String,
    /// The budget, e.g. `minAvailable 3`.
    pub budget: String,
    /// The replica count the budget was scaled at.
    pub replicas: i32,
    /// Voluntary disruptions allowed at that count.
    pub allowed: i64,
}

/// Everything the status depends on, besides the parent's current conditions.
#[derive(Clone, Debug, Default)]
pub struct Inputs<'a> {
    /// Parent name.
    pub name: &'a str,
    /// Parent namespace.
    pub namespace: &'a str,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `spec.replicas` (absent ⇒ 1); the desired count unless the HPA owns it.
    pub spec_replicas: Option<i32>,
    /// Autoscaling enabled.
    pub autoscaling: bool,
    /// The workload kind built from the spec.
    pub workload_kind: ChildKind,
    /// Status of the observed workload of that kind, if there is one; on the first sync of a
    /// new Memcached, which creates it, the empty status it will be observed with.
    pub workload: Option<ChildStatus>,
    /// The switch from the other workload, while it is under way.
    pub migration: Option<Migration<'a>>,
    /// What `serverList` publishes.
    pub server_list: ServerList,
    /// Names of referenced Secrets that are missing, sorted.
    pub missing_secrets: Vec<String>,
    /// Violations of an invalid spec, already summarised.
    pub invalid_spec: Option<String>,
    /// The emitted PDB, if any.
    pub pdb: Option<PdbState>,
    /// Child kinds the spec needs but the CompositeController does not declare:
    /// `(<resource>.<group>, spec field)`.
    pub missing_kinds: Vec<(String, &'static str)>,
    /// Keep the hook's conditions that are not computed this time (invalid spec: the kept
    /// children still are what those conditions describe).
    pub keep_previous: bool,
    /// The port `serverList` names when not 11211 (TLS with `allowPlaintext`: 11212).
    pub client_port: Option<i32>,
    /// TLS is on.
    pub tls: bool,
    /// With SASL or TLS on: how Secret changes reach the pods.
    pub secret_rotation: Option<SpecCondition>,
    /// `WarmRestart`, with a StatefulSet (`None` for a kept invalid spec).
    pub warm_restart: Option<SpecCondition>,
}

/// A switch between workloads under way: the old workload still serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration<'a> {
    /// Kind of the old workload.
    pub from: &'a str,
    /// Its ready pods.
    pub ready: i32,
}

/// What `status.serverList` publishes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServerList {
    /// Deployment mode: the headless Service's name while the Ready condition is True.
    #[default]
    ServiceWhenReady,
    /// A switch from a Deployment: the Service's name while any pod is ready.
    ServiceWhileServing,
    /// StatefulSet mode (or a switch from it): every pod by its stable name, in ordinal order.
    Pods(i32),
    /// StatefulSet mode before the StatefulSet exists.
    Nothing,
}

/// A computed condition before the merge.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Computed {
    type_: &'static str,
    status: bool,
    reason: &'static str,
    message: String,
}

fn condition(type_: &'static str, status: bool, reason: &'static str, message: String) -> Computed {
    Computed {
        type_,
        status,
        reason,
        message,
    }
}

/// The desired replica count the conditions compare against: the observed workload's under
/// autoscaling (once its controller has counted its pods), else `spec.replicas` (absent means 1).
#[must_use]
pub fn desired(inputs: &Inputs<'_>) -> i32 {
    let from_spec = inputs.spec_replicas.unwrap_or(1);
    match &inputs.workload {
        Some(dep) if inputs.autoscaling => dep.replicas.unwrap_or(from_spec),
        _ => from_spec,
    }
}

/// What the conditions compare: the desired count and the observed workload's counts.
#[derive(Clone, Copy)]
struct Counts<'a> {
    desired: i32,
    has_dep: bool,
    ready: i32,
    /// Ready pods behind the Service: during a switch the old workload's too.
    serving: i32,
    migration: Option<Migration<'a>>,
    to: &'static str,
    waiting: &'static str,
    updated: i32,
    total: i32,
    /// `" (HPA-managed)"` under autoscaling, else empty.
    hpa: &'static str,
}

impl<'a> Counts<'a> {
    fn of(inputs: &Inputs<'a>) -> Self {
        let dep = inputs.workload.as_ref();
        let count = |f: fn(&ChildStatus) -> Option<i32>| dep.and_then(f).unwrap_or(0);
        let ready = count(|d| d.ready_replicas);
        Self {
            desired: desired(inputs),
            has_dep: dep.is_some(),
            ready,
            serving: ready + inputs.migration.map_or(0, |m| m.ready),
            migration: inputs.migration,
            to: inputs.workload_kind.kind(),
            waiting: if inputs.workload_kind == ChildKind::StatefulSet {
                WAITING_FOR_STATEFULSET
            } else {
                WAITING
            },
            updated: count(|d| d.updated_replicas),
            total: count(|d| d.replicas),
            hpa: if inputs.autoscaling {
                " (HPA-managed)"
            } else {
                ""
            },
        }
    }
}

const WAITING: &str = "Waiting for deployment to be created";
const WAITING_FOR_STATEFULSET: &str = "Waiting for statefulset to be created";
const ALL_DECLARED: &str = "Every child kind the spec needs is declared by the CompositeController";

fn available(c: Counts<'_>) -> Computed {
    let (ready, desired, hpa) = (c.serving, c.desired, c.hpa);
    let message = format!("{ready}/{desired} replicas are ready{hpa}");
    if ready > 0 {
        condition(AVAILABLE, true, "Available", message)
    } else {
        condition(AVAILABLE, false, "Unavailable", message)
    }
}

fn progressing(c: Counts<'_>) -> Computed {
    let (updated, desired) = (c.updated, c.desired);
    if let Some(m) = c.migration {
        let (from, to, ready, old) = (m.from, c.to, c.ready, m.ready);
        let message = format!(
            "Switching from {from} to {to}: the {to} has {ready}/{desired} replicas ready; the \
             {from} keeps serving ({old} ready) until all are ready"
        );
        condition(PROGRESSING, true, WORKLOAD_MIGRATION, message)
    } else if !c.has_dep {
        condition(PROGRESSING, true, "Progressing", c.waiting.to_owned())
    } else if updated < desired || c.total != desired {
        let message = format!("Rollout in progress: {updated}/{desired} replicas updated");
        condition(PROGRESSING, true, "Progressing", message)
    } else {
        let message = format!("All {desired} replicas are updated");
        condition(PROGRESSING, false, "ProgressingComplete", message)
    }
}

fn degraded(c: Counts<'_>, inputs: &Inputs<'_>) -> Computed {
    let (ready, desired) = (c.serving, c.desired);
    if let Some(message) = &inputs.invalid_spec {
        let message = format!("Invalid spec, children left as they are: {message}");
        condition(DEGRADED, true, "InvalidSpec", message)
    } else if !inputs.missing_secrets.is_empty() {
        let names = inputs.missing_secrets.join(", ");
        let message = format!("Referenced Secrets not found: {names}");
        condition(DEGRADED, true, "SecretNotFound", message)
    } else if desired > 0 && ready < desired {
        let message = if c.has_dep || c.migration.is_some() {
            format!("Only {ready}/{desired} replicas are ready")
        } else {
            c.waiting.to_owned()
        };
        condition(DEGRADED, true, "Degraded", message)
    } else {
        let message = format!("All {desired} desired replicas are ready");
        condition(DEGRADED, false, "NotDegraded", message)
    }
}

fn ready(c: Counts<'_>) -> Computed {
    let (ready, desired) = (c.ready, c.desired);
    if desired > 0 && ready == desired {
        let message = format!("All {desired} replicas are ready");
        return condition(READY, true, "MemcachedReady", message);
    }
    let message = if desired == 0 {
        "Instance has zero desired replicas".to_owned()
    } else if !c.has_dep {
        c.waiting.to_owned()
    } else {
        format!("{ready}/{desired} replicas are ready")
    };
    condition(READY, false, "MemcachedNotReady", message)
}

fn disruption_budget(pdb: &PdbState) -> Computed {
    let (name, budget, replicas, allowed) = (&pdb.name, &pdb.budget, pdb.replicas, pdb.allowed);
    if allowed == 0 && replicas > 0 {
        let message = format!(
            "PodDisruptionBudget {name} ({budget}) allows no voluntary disruption at {replicas} \
             replicas: node drains will wait until the budget or the replica count changes"
        );
        condition(
            DISRUPTION_BUDGET_BLOCKING,
            true,
            "NoDisruptionsAllowed",
            message,
        )
    } else {
        let message = format!(
            "PodDisruptionBudget {name} ({budget}) allows {allowed} voluntary disruption(s) at \
             {replicas} replicas"
        );
        condition(
            DISRUPTION_BUDGET_BLOCKING,
            false,
            "DisruptionsAllowed",
            message,
        )
    }
}

fn child_kinds(missing: &[(String, &'static str)]) -> Computed {
    if missing.is_empty() {
        return condition(
            CHILD_RESOURCES_MISSING,
            false,
            "AllDeclared",
            ALL_DECLARED.to_owned(),
        );
    }
    let mut kinds: Vec<String> = missing
        .iter()
        .map(|(kind, field)| format!("{kind} (needed by {field})"))
        .collect();
    kinds.sort();
    let message = format!(
        "The CompositeController does not declare {}: add each to its spec.childResources with \
         updateStrategy InPlace",
        kinds.join(", ")
    );
    condition(CHILD_RESOURCES_MISSING, true, "NotDeclared", message)
}

fn computed(inputs: &Inputs<'_>) -> Vec<Computed> {
    let c = Counts::of(inputs);
    let mut out = vec![available(c), progressing(c), degraded(c, inputs), ready(c)];
    out.extend(inputs.pdb.as_ref().map(disruption_budget));
    let spec_conditions = [
        (SECRET_RELOAD, &inputs.secret_rotation),
        (WARM_RESTART, &inputs.warm_restart),
    ];
    for (type_, c) in spec_conditions {
        out.extend(
            c.as_ref()
                .map(|c| condition(type_, c.status, c.reason, c.message.clone())),
        );
    }
    out.push(child_kinds(&inputs.missing_kinds));
    out
}

/// Upserts `computed` into `previous` by type; removes managed types that are not computed.
fn merge(
    previous: &[Condition],
    computed: Vec<Computed>,
    inputs: &Inputs<'_>,
    now: &str,
) -> Vec<Condition> {
    let generation = inputs.generation;
    let managed = [
        AVAILABLE,
        PROGRESSING,
        DEGRADED,
        READY,
        DISRUPTION_BUDGET_BLOCKING,
        SECRET_RELOAD,
        WARM_RESTART,
        CHILD_RESOURCES_MISSING,
    ];
    let mut out: Vec<Condition> = previous
        .iter()
        .filter(|c| {
            inputs.keep_previous
                || !managed.contains(&c.type_.as_str())
                || computed.iter().any(|n| n.type_ == c.type_)
        })
        .cloned()
        .collect();
    for new in computed {
        let status = if new.status { "True" } else { "False" };
        match out.iter_mut().find(|c| c.type_ == new.type_) {
            Some(old) => {
                if old.status != status || old.last_transition_time.is_empty() {
                    now.clone_into(&mut old.last_transition_time);
                }
                status.clone_into(&mut old.status);
                new.reason.clone_into(&mut old.reason);
                old.message = new.message;
                old.observed_generation = generation;
            }
            None => out.push(Condition {
                type_: new.type_.to_owned(),
                status: status.to_owned(),
                reason: new.reason.to_owned(),
                message: new.message,
                last_transition_time: now.to_owned(),
                observed_generation: generation,
            }),
        }
    }
    out
}

/// The whole new status. `now` is the request's wall-clock time in RFC 3339, whole seconds.
#[must_use]
pub fn build(inputs: &Inputs<'_>, previous: &[Condition], now: &str) -> MemcachedStatus {
    let conditions = merge(previous, computed(inputs), inputs, now);
    let ready = conditions
        .iter()
        .any(|c| c.type_ == READY && c.status == "True");
    let serving = inputs
        .workload
        .as_ref()
        .and_then(|d| d.ready_replicas)
        .unwrap_or(0)
        + inputs.migration.map_or(0, |m| m.ready);
    let (name, namespace) = (inputs.name, inputs.namespace);
    let port = inputs.client_port.unwrap_or(ports::MEMCACHED.number);
    let host = discovery::service_host(name, namespace);
    let service = || vec![format!("{host}:{port}")];
    let server_list = match inputs.server_list {
        ServerList::ServiceWhenReady => ready.then(service),
        ServerList::ServiceWhileServing => (serving > 0).then(service),
        ServerList::Pods(n) => {
            Some(statefulset::server_list(name, namespace, n, port)).filter(|list| !list.is_empty())
        }
        ServerList::Nothing => None,
    };
    let per_pod = matches!(
        inputs.server_list,
        ServerList::Pods(_) | ServerList::Nothing
    );
    let tls_server_names = inputs
        .tls
        .then(|| discovery::tls_server_names(name, namespace, per_pod));
    MemcachedStatus {
        conditions: Some(conditions),
        ready_replicas: (serving != 0).then_some(serving),
        desired_replicas: Some(desired(inputs)),
        observed_generation: inputs.generation,
        server_list,
        srv_name: Some(discovery::srv_name(
            name,
            namespace,
            &discovery::client_port(port),
        )),
        tls_server_names,
    }
}
