//! The conditions computed from the spec and the observed workload, before they are merged
//! into the parent's current ones (`super::build`).

use super::{
    AVAILABLE, CHILD_RESOURCES_MISSING, DEGRADED, DISRUPTION_BUDGET_BLOCKING, Inputs, PROGRESSING,
    PdbState, READY, SECRET_RELOAD, Switching, Taken, WARM_RESTART, WORKLOAD_MIGRATION,
    ZONE_DISRUPTION, ZONE_SWITCH, ZoneSwitch,
};
use crate::api::ZoneStatus;
use crate::children::ChildKind;
use crate::hook::ChildStatus;
use crate::workload::budgets::Budgets;

/// A computed condition before the merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Computed {
    pub(super) type_: &'static str,
    pub(super) status: bool,
    pub(super) reason: &'static str,
    pub(super) message: String,
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
        Some(workload) if inputs.autoscaling => workload.replicas.unwrap_or(from_spec),
        _ => from_spec,
    }
}

/// What the conditions compare: the desired count and the observed workload's counts.
#[derive(Clone, Copy)]
struct Counts<'a> {
    desired: i32,
    /// The workload has been observed (or is being created).
    has_workload: bool,
    ready: i32,
    /// Ready pods behind the Service: during a switch the old workload's too.
    serving: i32,
    migration: Option<Switching<'a>>,
    to: &'static str,
    waiting: &'static str,
    updated: i32,
    /// The workload's pods are `desired` pods of its current template
    /// ([`ChildStatus::all_updated`], the count rule of `ObservedChild::rolled_out`).
    all_updated: bool,
    /// `" (HPA-managed)"` under autoscaling, else empty.
    hpa: &'static str,
}

impl<'a> Counts<'a> {
    fn of(inputs: &Inputs<'a>) -> Self {
        let workload = inputs.workload.as_ref();
        let count = |f: fn(&ChildStatus) -> Option<i32>| workload.and_then(f).unwrap_or(0);
        let ready = count(|d| d.ready_replicas);
        let desired = desired(inputs);
        Self {
            desired,
            has_workload: workload.is_some(),
            ready,
            serving: inputs.serving(),
            migration: inputs.switching,
            to: inputs.workload_kind.kind(),
            waiting: if inputs.workload_kind == ChildKind::StatefulSet {
                WAITING_FOR_STATEFULSET
            } else {
                WAITING
            },
            updated: count(|d| d.updated_replicas),
            all_updated: workload.is_some_and(|w| w.all_updated(desired)),
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
        let (reason, message) = switching(m, c);
        condition(PROGRESSING, true, reason, message)
    } else if !c.has_workload {
        condition(PROGRESSING, true, "Progressing", c.waiting.to_owned())
    } else if !c.all_updated {
        let message = format!("Rollout in progress: {updated}/{desired} replicas updated");
        condition(PROGRESSING, true, "Progressing", message)
    } else {
        let message = format!("All {desired} replicas are updated");
        condition(PROGRESSING, false, "ProgressingComplete", message)
    }
}

/// The reason and message of `Progressing` during the switch `m`.
fn switching(m: Switching<'_>, c: Counts<'_>) -> (&'static str, String) {
    let (from, to, ready, old, desired) = (m.from, c.to, c.ready, m.ready, c.desired);
    let message = match m.zones {
        None => format!(
            "Switching from {from} to {to}: the {to} has {ready}/{desired} replicas ready; the \
             {from} keeps serving ({old} ready) until all are ready"
        ),
        Some(ZoneSwitch::On) => format!(
            "Switching to zones: the zone workloads have {ready}/{desired} replicas ready; the \
             {from} without zones keeps serving ({old} ready) until all are ready"
        ),
        Some(ZoneSwitch::Off) => format!(
            "Switching off zones: the {to} has {ready}/{desired} replicas ready; the zone \
             workloads keep serving ({old} ready) until all are ready"
        ),
        Some(ZoneSwitch::Names) => format!(
            "Changing zones: the zone workloads have {ready}/{desired} replicas ready; the \
             workloads of the zones no longer named keep serving ({old} ready) until all are ready"
        ),
    };
    let reason = if m.zones.is_some() {
        ZONE_SWITCH
    } else {
        WORKLOAD_MIGRATION
    };
    (reason, message)
}

/// Reason of `Ready` False and `Degraded` True while a child's name is taken.
pub const CHILD_NAME_TAKEN: &str = "ChildNameTaken";

/// What `Ready` and `Degraded` say of children whose names other objects hold.
fn taken_message(taken: &[Taken]) -> String {
    let named: Vec<String> = taken
        .iter()
        .map(|t| match &t.controller {
            Some(controller) => format!("{} {} (controlled by {controller})", t.kind, t.name),
            None => format!("{} {} (controlled by no one)", t.kind, t.name),
        })
        .collect();
    format!(
        "Cannot create {}: an object of that name already exists and is not this Memcached's. \
         Delete or rename that object, or give this Memcached another name",
        named.join(", ")
    )
}

fn degraded(c: Counts<'_>, inputs: &Inputs<'_>) -> Computed {
    let (ready, desired) = (c.serving, c.desired);
    if let Some(message) = &inputs.invalid_spec {
        let message = format!("Invalid spec, children left as they are: {message}");
        condition(DEGRADED, true, "InvalidSpec", message)
    } else if !inputs.taken.is_empty() {
        condition(
            DEGRADED,
            true,
            CHILD_NAME_TAKEN,
            taken_message(&inputs.taken),
        )
    } else if !inputs.missing_secrets.is_empty() {
        let names = inputs.missing_secrets.join(", ");
        let message = format!("Referenced Secrets not found: {names}");
        condition(DEGRADED, true, "SecretNotFound", message)
    } else if desired > 0 && ready < desired {
        let message = if c.has_workload || c.migration.is_some() {
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
    } else if !c.has_workload {
        c.waiting.to_owned()
    } else {
        format!("{ready}/{desired} replicas are ready")
    };
    condition(READY, false, "MemcachedNotReady", message)
}

/// Whether a budget blocks every drain: the user's at its replica count, or with zones a zone's
/// budget the zone rule has closed (`ZoneDisruption` says why).
fn disruption_budget(pdb: &PdbState, zones: Option<(&[ZoneStatus], &Budgets)>) -> Computed {
    let (name, budget, replicas, allowed) = (&pdb.name, &pdb.budget, pdb.replicas, pdb.allowed);
    let closed = zones.and_then(|(status, budgets)| super::zones::blocking(status, budgets));
    if let Some(closed) = closed.filter(|_| allowed > 0) {
        let message = format!(
            "The PodDisruptionBudgets of zones {closed} allow no voluntary disruption now (the \
             ZoneDisruption condition says why): drains of their nodes wait"
        );
        return condition(
            DISRUPTION_BUDGET_BLOCKING,
            true,
            "ZoneBudgetsBlock",
            message,
        );
    }
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

/// `UpToDate`: whether every workload runs this hook's current rendering of its pod template.
fn up_to_date(behind: &[String]) -> Computed {
    use super::up_to_date::{CURRENT, NEW_RENDERING, UP_TO_DATE, message};
    if behind.is_empty() {
        let message = "every workload runs this hook's current rendering of its pod template";
        condition(UP_TO_DATE, true, CURRENT, message.to_owned())
    } else {
        condition(UP_TO_DATE, false, NEW_RENDERING, message(behind))
    }
}

/// Every condition the sync computes, before the merge into the parent's current conditions.
pub(super) fn computed(inputs: &Inputs<'_>) -> Vec<Computed> {
    let c = Counts::of(inputs);
    let ready = if inputs.taken.is_empty() {
        ready(c)
    } else {
        condition(READY, false, CHILD_NAME_TAKEN, taken_message(&inputs.taken))
    };
    let mut out = vec![available(c), progressing(c), degraded(c, inputs), ready];
    let zones = inputs
        .zone_budgets
        .as_ref()
        .map(|b| (inputs.zones.as_slice(), b));
    out.extend(inputs.pdb.as_ref().map(|pdb| disruption_budget(pdb, zones)));
    if let Some(s) = inputs.spec {
        let namespace = inputs.namespace;
        let secret_reload =
            super::secret_reload::condition(s.effective, s.related, namespace, s.agent_image);
        let warm_restart =
            super::warm_restart::condition(s.effective, s.plan, s.related, namespace);
        for (type_, c) in [(SECRET_RELOAD, secret_reload), (WARM_RESTART, warm_restart)] {
            out.extend(c.map(|c| condition(type_, c.status, c.reason, c.message)));
        }
    }
    if inputs.spec.is_some() {
        out.push(up_to_date(&inputs.behind));
    }
    if let Some(budgets) = &inputs.zone_budgets {
        let c = super::zones::condition(&inputs.zones, budgets);
        out.push(condition(ZONE_DISRUPTION, c.status, c.reason, c.message));
    }
    if let Some(p) = &inputs.proxy {
        let c = super::proxies::condition(p, inputs.spec.map(|s| s.agent_image));
        out.push(condition(super::PROXY_READY, c.status, c.reason, c.message));
    }
    out.push(child_kinds(&inputs.missing_kinds));
    out
}
