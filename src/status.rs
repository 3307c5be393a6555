//! The parent's status (spec.md Part 2 §d, Part 1 §1.3).
//!
//! Conditions are computed from the *observed* Deployment, then merged into the parent's
//! current conditions by type: `lastTransitionTime` is carried over while a condition's status
//! does not change, so the status is a deterministic function of the request and Metacontroller
//! does not sync again and again.

use crate::api::{Condition, MemcachedStatus};
use crate::children::MEMCACHED_PORT;
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
    /// Status of the observed Deployment, if there is one.
    pub deployment: Option<ChildStatus>,
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

/// The desired replica count the conditions compare against (§d.1).
#[must_use]
pub fn desired(inputs: &Inputs<'_>) -> i32 {
    match inputs.deployment {
        Some(dep) if inputs.autoscaling => dep.replicas.unwrap_or(0),
        _ => inputs.spec_replicas.unwrap_or(1),
    }
}

fn computed(inputs: &Inputs<'_>) -> Vec<Computed> {
    let desired = desired(inputs);
    let has_dep = inputs.deployment.is_some();
    let dep = inputs.deployment.unwrap_or_default();
    let (ready, updated, total) = (
        dep.ready_replicas.unwrap_or(0),
        dep.updated_replicas.unwrap_or(0),
        dep.replicas.unwrap_or(0),
    );
    const WAITING: &str = "Waiting for deployment to be created";

    let hpa = if inputs.autoscaling {
        " (HPA-managed)"
    } else {
        ""
    };
    let available = if ready > 0 {
        condition(
            AVAILABLE,
            true,
            "Available",
            format!("{ready}/{desired} replicas are ready{hpa}"),
        )
    } else {
        condition(
            AVAILABLE,
            false,
            "Unavailable",
            format!("{ready}/{desired} replicas are ready{hpa}"),
        )
    };

    let progressing = if !has_dep {
        condition(PROGRESSING, true, "Progressing", WAITING.to_owned())
    } else if updated < desired || total != desired {
        condition(
            PROGRESSING,
            true,
            "Progressing",
            format!("Rollout in progress: {updated}/{desired} replicas updated"),
        )
    } else {
        condition(
            PROGRESSING,
            false,
            "ProgressingComplete",
            format!("All {desired} replicas are updated"),
        )
    };

    let degraded = if let Some(message) = &inputs.invalid_spec {
        condition(
            DEGRADED,
            true,
            "InvalidSpec",
            format!("Invalid spec, children left as they are: {message}"),
        )
    } else if !inputs.missing_secrets.is_empty() {
        condition(
            DEGRADED,
            true,
            "SecretNotFound",
            format!(
                "Referenced Secrets not found: {}",
                inputs.missing_secrets.join(", ")
            ),
        )
    } else if desired > 0 && ready < desired {
        let message = if has_dep {
            format!("Only {ready}/{desired} replicas are ready")
        } else {
            WAITING.to_owned()
        };
        condition(DEGRADED, true, "Degraded", message)
    } else {
        condition(
            DEGRADED,
            false,
            "NotDegraded",
            format!("All {desired} desired replicas are ready"),
        )
    };

    let ready_condition = if desired > 0 && ready == desired {
        condition(
            READY,
            true,
            "MemcachedReady",
            format!("All {desired} replicas are ready"),
        )
    } else {
        let message = if desired == 0 {
            "Instance has zero desired replicas".to_owned()
        } else if !has_dep {
            WAITING.to_owned()
        } else {
            format!("{ready}/{desired} replicas are ready")
        };
        condition(READY, false, "MemcachedNotReady", message)
    };

    let mut out = vec![available, progressing, degraded, ready_condition];
    if let Some(pdb) = &inputs.pdb {
        out.push(if pdb.allowed == 0 && pdb.replicas > 0 {
            condition(
                DISRUPTION_BUDGET_BLOCKING,
                true,
                "NoDisruptionsAllowed",
                format!(
                    "PodDisruptionBudget {} ({}) allows no voluntary disruption at {} replicas: node drains will wait until the budget or the replica count changes",
                    pdb.name, pdb.budget, pdb.replicas
                ),
            )
        } else {
            condition(
                DISRUPTION_BUDGET_BLOCKING,
                false,
                "DisruptionsAllowed",
                format!(
                    "PodDisruptionBudget {} ({}) allows {} voluntary disruption(s) at {} replicas",
                    pdb.name, pdb.budget, pdb.allowed, pdb.replicas
                ),
            )
        });
    }
    out.push(if inputs.missing_kinds.is_empty() {
        condition(CHILD_RESOURCES_MISSING, false, "AllDeclared", "Every child kind the spec needs is declared by the CompositeController".to_owned())
    } else {
        let mut kinds: Vec<String> =
            inputs.missing_kinds.iter().map(|(kind, field)| format!("{kind} (needed by {field})")).collect();
        kinds.sort();
        condition(
            CHILD_RESOURCES_MISSING,
            true,
            "NotDeclared",
            format!(
                "The CompositeController does not declare {}: add each to its spec.childResources with updateStrategy InPlace",
                kinds.join(", ")
            ),
        )
    });
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
    let ready_replicas = inputs
        .deployment
        .and_then(|d| d.ready_replicas)
        .filter(|r| *r != 0);
    MemcachedStatus {
        conditions: Some(conditions),
        ready_replicas,
        desired_replicas: Some(desired(inputs)),
        observed_generation: inputs.generation,
        server_list: ready.then(|| {
            vec![format!(
                "{}.{}:{MEMCACHED_PORT}",
                inputs.name, inputs.namespace
            )]
        }),
    }
}
