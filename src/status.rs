//! The parent's status: conditions, `readyReplicas`, `serverList` (docs/behaviour.md).
//!
//! Conditions are computed from the *observed* workload, then merged into the parent's
//! current conditions by type: `lastTransitionTime` is carried over while a condition's status
//! does not change, so the status is a deterministic function of the request and Metacontroller
//! does not sync again and again.

use crate::api::effective::Effective;
use crate::api::{Condition, MemcachedStatus, ZoneStatus};
use crate::children::servers::{Members, Shown};
use crate::children::{ChildKind, discovery, labels, ports};
use crate::hook::{ChildStatus, Observed, RelatedObject};
use crate::workload::Plan;
use crate::workload::budgets::Budgets;
use crate::workload::count;
pub use crate::workload::{Switching, ZoneSwitch};

mod conditions;
mod pods;
pub mod proxies;
pub mod secret_reload;
pub mod up_to_date;
pub mod warm_restart;
pub mod warm_starts;
pub mod zones;

use conditions::desired;
use conditions::{Computed, computed};

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

/// Condition type: with `spec.zones`, which zone's disruption budget lets pods go.
pub const ZONE_DISRUPTION: &str = "ZoneDisruption";

/// Condition type: with `spec.proxy`, whether every proxy pod wanted is ready (the cache's own
/// `Ready` does not count them).
pub const PROXY_READY: &str = "ProxyReady";

/// A condition computed from the spec (`SecretReload`, `WarmRestart`, `ZoneDisruption`).
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
/// Reason of `Progressing` while `spec.zones` is turned on or off or the zone names change.
pub const ZONE_SWITCH: &str = "ZoneSwitch";

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

/// A child Metacontroller cannot create: an object of its kind and name exists that is not the
/// Memcached's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken {
    /// The child's kind, e.g. `Deployment`.
    pub kind: &'static str,
    /// The child's name.
    pub name: String,
    /// Who controls the existing object (`Memcached cache`), if anyone.
    pub controller: Option<String>,
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
    /// The switch from the other workload (or layout), while it is under way.
    pub switching: Option<Switching<'a>>,
    /// Who `serverList` names.
    pub server_list: Members<'a>,
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
    /// The valid spec and what it was planned with, which `SecretReload` and `WarmRestart`
    /// read (`None` for a kept invalid spec).
    pub spec: Option<Spec<'a>>,
    /// With `spec.zones`: each zone, in spec order (empty without zones or for a kept invalid
    /// spec).
    pub zones: Vec<ZoneStatus>,
    /// With `spec.zones`: the pods each zone should have ready.
    pub zone_replicas: i32,
    /// With `spec.zones` and a disruption budget: the zones' budgets as built, which
    /// `ZoneDisruption` explains.
    pub zone_budgets: Option<Budgets>,
    /// What a rollout to this hook's rendering would change in the workloads that keep an
    /// older one, each part once (empty: every workload runs the current rendering), which
    /// `UpToDate` phrases.
    pub behind: Vec<String>,
    /// Children whose names other objects hold, in answer order.
    pub taken: Vec<Taken>,
    /// With `spec.proxy`: `status.proxy`.
    pub proxy: Option<crate::api::ProxyStatus>,
}

/// The valid spec of a sync, its workload plan, the related objects Metacontroller sent and the
/// hook's reload-agent image.
#[derive(Clone, Copy, Debug)]
pub struct Spec<'a> {
    /// The spec with its defaults.
    pub effective: &'a Effective<'a>,
    /// The workload's plan.
    pub plan: &'a Plan<'a>,
    /// The related objects (the pods, when the customize hook asked for them).
    pub related: &'a Observed<RelatedObject>,
    /// The hook's `--reload-agent-image`.
    pub agent_image: &'a str,
}

impl Inputs<'_> {
    /// Ready pods behind the Service: the workload's, and during a switch the old workload's too.
    #[must_use]
    pub fn serving(&self) -> i32 {
        let ready = count(self.workload.as_ref().and_then(|d| d.ready_replicas));
        ready.saturating_add(self.switching.map_or(0, |m| m.ready))
    }
}

/// Upserts `computed` into `previous` by type; removes managed types that are not computed.
/// Conditions are a map keyed by type: a type repeated in `previous` is read at its first
/// occurrence and answered once.
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
        ZONE_DISRUPTION,
        PROXY_READY,
        CHILD_RESOURCES_MISSING,
        up_to_date::UP_TO_DATE,
    ];
    let mut seen = std::collections::BTreeSet::new();
    let mut out: Vec<Condition> = previous
        .iter()
        .filter(|c| seen.insert(c.type_.as_str()))
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
    let serving = inputs.serving();
    let (name, namespace) = (inputs.name, inputs.namespace);
    let port = inputs.client_port.unwrap_or(ports::MEMCACHED.number);
    let listed = || inputs.server_list.addresses(name, namespace, port);
    let server_list = match inputs.server_list {
        Members::Service(Shown::WhenReady) => ready.then(listed),
        Members::Service(Shown::WhileServing) => (serving > 0).then(listed),
        Members::Pods(_) => Some(listed()).filter(|list| !list.is_empty()),
        Members::Planned(_) => None,
        Members::Zones(..) => Some(
            inputs
                .zones
                .iter()
                .flat_map(|z| z.server_list.iter().flatten().cloned())
                .collect::<Vec<_>>(),
        )
        .filter(|list| !list.is_empty()),
    };
    let per_pod = inputs.server_list.per_pod();
    let tls_server_names = inputs
        .tls
        .then(|| discovery::tls_server_names(name, namespace, per_pod));
    MemcachedStatus {
        conditions: Some(conditions),
        ready_replicas: (serving != 0).then_some(serving),
        desired_replicas: Some(desired(inputs)),
        replicas: Some(scale_replicas(inputs)),
        // Only without zones and without the hook's own autoscaler: an autoscaler that targets
        // the Memcached then counts pods in the unit of `spec.replicas` and is the only one to
        // set it.
        selector: (!inputs.autoscaling && inputs.zone_replicas == 0)
            .then(|| labels::selector_string(name)),
        observed_generation: inputs.generation,
        server_list,
        srv_name: Some(discovery::srv_name(
            name,
            namespace,
            &discovery::client_port(port),
        )),
        tls_server_names,
        zones_ready: (!inputs.zones.is_empty()).then(|| zones_ready(inputs)),
        zones: (!inputs.zones.is_empty()).then(|| inputs.zones.clone()),
        proxy: inputs.proxy.clone(),
    }
}

/// The scale subresource's current count: the workload's pods, per zone with `spec.zones`
/// (`spec.replicas` counts per zone), rounded down.
fn scale_replicas(inputs: &Inputs<'_>) -> i32 {
    let pods = inputs
        .workload
        .as_ref()
        .and_then(|w| w.replicas)
        .unwrap_or(0);
    match i32::try_from(inputs.zones.len()) {
        Ok(zones) if zones > 1 => pods / zones,
        _ => pods,
    }
}

/// `<zones with every pod ready>/<zones>`: a zone is ready when its ready pods reach the
/// count per zone.
fn zones_ready(inputs: &Inputs<'_>) -> String {
    let ready = inputs
        .zones
        .iter()
        .filter(|z| z.ready_replicas.unwrap_or(0) >= inputs.zone_replicas)
        .count();
    format!("{ready}/{}", inputs.zones.len())
}
