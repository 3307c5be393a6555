//! `sync`: the one pure function behind `/sync`, `replay` and `render`.

use k8s_openapi::jiff::Timestamp;

use crate::api::effective::Effective;
use crate::api::high_availability::Budget;
use crate::api::validation;
use crate::api::{GROUP, KIND, VERSIONS, Workload};
use crate::children::pod::{Pods, Rollers};
use crate::children::servers::{self, Members};
use crate::children::{
    ChildKind, accept, agent_access, deployment, hpa, inherited, network_policy, pdb, ports,
    proxy_config, proxy_pods, service, service_monitor, statefulset,
};
use crate::hook::{Child, Parent, Received, SyncResponse};
use crate::keep::{self, Asked};
use crate::secrets;
use crate::status::{self, PdbState};
use crate::workload::{self, Before, Layout, Plan};

mod agent_account;
mod customize;
mod error;
mod inputs;
mod invalid;
mod leaving;
mod options;
mod taken;
mod template;
mod zones;

use agent_account::Access;
pub use customize::customize;
pub use error::SyncError;
use inputs::inputs;
use invalid::keep_observed;
pub use options::Options;
use template::Intent;

/// A `Memcached` of a served version.
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

/// A Memcached is namespaced: the API server always sends its namespace. Without one, the
/// server list and the ServiceMonitor would name no namespace.
fn check_namespace(parent: &Parent) -> Result<(), SyncError> {
    match parent.metadata.namespace.as_deref() {
        Some(namespace) if !namespace.is_empty() => Ok(()),
        _ => Err(SyncError::NoNamespace),
    }
}

/// Formats the request time the way conditions carry it: RFC 3339, whole seconds, UTC.
#[must_use]
pub fn condition_time(now: Timestamp) -> String {
    Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
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
    /// With `spec.zones`: what the zones' children say of the zones.
    zones: ZoneOutcome,
    /// What a rollout to this hook's rendering would change in the workloads that keep an
    /// older one (`status::up_to_date`), each part once.
    behind: Vec<String>,
    /// Answered children whose names other objects hold.
    taken: Vec<status::Taken>,
}

impl Outcome {
    /// Adds what a rollout of one kept workload would change.
    fn behind(&mut self, differences: Option<Vec<String>>) {
        for part in differences.into_iter().flatten() {
            if !self.behind.contains(&part) {
                self.behind.push(part);
            }
        }
    }
}

/// What the children of `spec.zones` say of the zones, for the status.
#[derive(Default)]
struct ZoneOutcome {
    /// The zones' budgets as emitted.
    budgets: Option<crate::workload::budgets::Budgets>,
    /// For each zone, whether its observed workload does not carry the desired pod template yet
    /// (a zone the rollout holds back).
    outdated: Option<Vec<bool>>,
}

/// Computes the desired children and the status for one sync request at time `now`.
///
/// # Errors
/// [`SyncError::WrongParent`] for a parent of another kind or group; [`SyncError::NoNamespace`]
/// for one without a namespace; [`SyncError::InvalidSpec`] for an invalid spec whose observed
/// children cannot be kept (none observed, or one [`crate::keep`] cannot keep);
/// [`SyncError::CannotKeepWorkload`] for the old workload of a switch that cannot be kept.
pub fn sync(
    received: &Received<'_>,
    now: Timestamp,
    options: &Options,
) -> Result<SyncResponse, SyncError> {
    let req = received.request();
    let parent = &req.parent;
    check_parent(parent)?;
    check_namespace(parent)?;
    let name = parent.metadata.name.as_str();
    let e = Effective::with(&parent.spec, options.image_defaults());
    let declared = |kind: &ChildKind| req.controller.declares(kind.api_version(), kind.resource());
    let mut violations = validation::validate_effective(name, &parent.spec, &e);
    if violations.is_empty() {
        violations = workload::violations(&e, &req.children, name);
    }
    let statefulsets = declared(&ChildKind::StatefulSet);
    if violations.is_empty() && declared(&ChildKind::ConfigMap) {
        let namespace = parent.metadata.namespace.as_deref().unwrap_or_default();
        violations.extend(servers::size::violation(name, namespace, &e, statefulsets));
    }
    let at = (name, statefulsets);
    let layout = Layout::of(
        &e,
        &req.children,
        at,
        violations.is_empty(),
        before(parent, now),
    );
    let access = agent_account::access(&e, options, req, &layout.plan);
    let needed = needed_kinds(&e, access);
    let missing_kinds = needed
        .iter()
        .filter(|k| !declared(k))
        .map(|k| (k.qualified_resource(), k.needed_by()))
        .collect();
    let mut built = None;
    if violations.is_empty() {
        let switching = layout.switching_kind();
        let mut declared: Vec<ChildKind> = emitted(&needed, &layout.plan, switching)
            .into_iter()
            .filter(|k| declared(k))
            .collect();
        agent_access_whole(&mut declared);
        let (mut children, outcome) = desired(received, &e, &layout, &declared, (options, access))?;
        inherited::apply(&mut children, e.child_metadata);
        // A child the cluster would refuse makes the spec invalid: a 200 means children the
        // API server and Metacontroller accept.
        violations = accept::check(&children);
        let taken = taken::taken(&children, req);
        built = Some((children, Outcome { taken, ..outcome }));
    }
    let (children, outcome) = match built {
        Some(built) if violations.is_empty() => built,
        _ => keep_observed(received, violations)?,
    };
    let outcome = Outcome {
        missing_kinds,
        ..outcome
    };
    let inputs = inputs(req, &e, &layout, outcome, &options.reload_agent_image);
    let status = status::build(&inputs, &parent.status.conditions, &condition_time(now));
    Ok(SyncResponse {
        children,
        status,
        resync_after_seconds: layout.resync_after_seconds(),
    })
}

/// What the zones' budgets read from the parent's status as the last sync wrote it, at `now`.
fn before(parent: &Parent, now: Timestamp) -> Before<'_> {
    Before {
        starting: status::zones::were_starting(&parent.status.conditions),
        zones: &parent.status.zones,
        now,
    }
}

/// The desired children of the `kinds` a valid spec asks for, and what they are.
fn desired(
    received: &Received<'_>,
    e: &Effective<'_>,
    layout: &Layout<'_>,
    kinds: &[ChildKind],
    (options, access): (&Options, Access),
) -> Result<(Vec<Child>, Outcome), SyncError> {
    let req = received.request();
    let parent = &req.parent;
    let name = parent.metadata.name.as_str();
    let namespace = parent.metadata.namespace.as_deref().unwrap_or_default();
    let (hash, missing_secrets) = secrets::hash_and_missing(&e.security, &req.related, namespace);
    let served = ports::served(e);
    let mut outcome = Outcome {
        missing_secrets,
        ..Outcome::default()
    };
    // Emitted together or not at all (`agent_access_whole`).
    let reports = access == Access::Report && kinds.contains(&ChildKind::RoleBinding);
    let rollers = Rollers::of(parent, hash.as_deref());
    let pods = Pods::new(
        name,
        e,
        (&served, rollers),
        &options.reload_agent_image,
        reports,
    );
    let intent = Intent::of(parent, pods.rollers, options);
    let mut children = Vec::with_capacity(kinds.len());
    for kind in kinds {
        if let Some(z) = &layout.zones {
            let at = (received, name, e, pods);
            if zones::zone_children(*kind, z, at, &intent, &mut children, &mut outcome)? {
                continue;
            }
        }
        let plan = &layout.plan;
        children.push(match kind {
            ChildKind::Deployment | ChildKind::StatefulSet if *kind == plan.kind => {
                answered_workload(plan, (received, pods), &intent, &mut outcome)
            }
            ChildKind::Deployment | ChildKind::StatefulSet => {
                let Some(old) = kept_old_workload(*kind, plan, received)? else {
                    continue;
                };
                old
            }
            ChildKind::Service => Child::Service(Box::new(service::build(name, e, &served))),
            optional => {
                let at = (name, namespace);
                let Some(child) = optional_child(*optional, at, e, layout, &served, &mut outcome)
                else {
                    continue;
                };
                child
            }
        });
    }
    let kept = layout
        .switch
        .as_ref()
        .map(|s| s.kept(received))
        .transpose()?;
    children.extend(kept.into_iter().flatten());
    let at = ((name, namespace), &*options.reload_agent_image);
    children.extend(proxy_children(at, e, layout, (kinds, req)));
    Ok((children, outcome))
}

/// A child other than the workload and the Service, if the spec asks for it.
fn optional_child(
    kind: ChildKind,
    (name, namespace): (&str, &str),
    e: &Effective<'_>,
    layout: &Layout<'_>,
    served: &[ports::Port],
    outcome: &mut Outcome,
) -> Option<Child> {
    Some(match kind {
        ChildKind::PodDisruptionBudget => {
            let wanted = e.high_availability.pdb.as_ref()?;
            outcome.pdb = Some(pdb_state(name, &wanted.budget, e));
            Child::PodDisruptionBudget(Box::new(pdb::build(name, wanted)))
        }
        ChildKind::HorizontalPodAutoscaler => {
            let a = e.autoscaling.as_ref()?;
            Child::HorizontalPodAutoscaler(Box::new(hpa::build(name, a, layout.plan.kind)))
        }
        ChildKind::ServiceMonitor => {
            let monitor = e.monitoring.as_ref();
            let sm = monitor.and_then(|m| m.service_monitor.as_ref())?;
            Child::ServiceMonitor(Box::new(service_monitor::build(name, namespace, sm)))
        }
        ChildKind::NetworkPolicy => {
            let sources = e.security.network_policy?;
            let proxy = e.proxy.map(|p| (proxy_pods::peer(name), p.direct_clients));
            let admitted = network_policy::Admitted {
                sources,
                proxy: proxy.as_ref().map(|(peer, direct)| (peer, *direct)),
            };
            let policy = network_policy::build(name, served, admitted);
            Child::NetworkPolicy(Box::new(policy))
        }
        // Listed in `kinds` when the server list or the proxy asks for it.
        ChildKind::ConfigMap => {
            e.discovery.config_map.then_some(())?;
            config_map(name, namespace, e, layout.members())
        }
        ChildKind::ServiceAccount => {
            Child::ServiceAccount(Box::new(agent_access::service_account(name)))
        }
        ChildKind::RoleBinding => {
            Child::RoleBinding(Box::new(agent_access::role_binding(name, namespace)))
        }
        ChildKind::Deployment | ChildKind::StatefulSet | ChildKind::Service => return None,
    })
}

/// The child kinds the effective spec (and the agent's `access`) ask for, in emission order.
fn needed_kinds(e: &Effective<'_>, access: Access) -> Vec<ChildKind> {
    ChildKind::ALL
        .into_iter()
        .filter(|kind| match kind {
            ChildKind::Deployment => e.workload == Workload::Deployment,
            ChildKind::StatefulSet => e.workload == Workload::StatefulSet,
            ChildKind::Service => true,
            ChildKind::PodDisruptionBudget => e.high_availability.pdb.is_some(),
            ChildKind::HorizontalPodAutoscaler => e.autoscaling.is_some(),
            ChildKind::ServiceMonitor => e
                .monitoring
                .as_ref()
                .is_some_and(|m| m.service_monitor.is_some()),
            ChildKind::NetworkPolicy => e.security.network_policy.is_some(),
            ChildKind::ConfigMap => e.discovery.config_map || e.proxy.is_some(),
            ChildKind::ServiceAccount | ChildKind::RoleBinding => access != Access::None,
        })
        .collect()
}

/// The agent's ServiceAccount and RoleBinding are emitted together or not at all: one
/// without the other gives the agent no access (the missing kind is reported either way).
fn agent_access_whole(kinds: &mut Vec<ChildKind>) {
    let both =
        kinds.contains(&ChildKind::ServiceAccount) && kinds.contains(&ChildKind::RoleBinding);
    if !both {
        kinds.retain(|k| !matches!(k, ChildKind::ServiceAccount | ChildKind::RoleBinding));
    }
}

/// The replica count a budget is judged at: the desired count, or under autoscaling the lowest
/// count the HPA may choose.
pub(super) fn pdb_state(name: &str, budget: &Budget<'_>, e: &Effective<'_>) -> PdbState {
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

/// The old workload of a switch (of `kind`), kept as observed; `None` when no switch is under
/// way.
pub(super) fn kept_old_workload(
    kind: ChildKind,
    plan: &Plan<'_>,
    received: &Received<'_>,
) -> Result<Option<Child>, SyncError> {
    let Some(old) = plan.switching_from() else {
        return Ok(None);
    };
    let kept =
        keep::observed(received, Asked::LeavingWorkload(old)).and_then(|mut kept| kept.pop());
    let kept = kept.ok_or_else(|| SyncError::CannotKeepWorkload {
        kind: kind.kind(),
        name: old.metadata.name.clone(),
    })?;
    Ok(Some(kept))
}

/// The workload the plan builds from the spec, with the pod template its owner's intent gives
/// it ([`template::answer`]).
fn answered_workload(
    plan: &Plan<'_>,
    (received, pods): (&Received<'_>, Pods<'_>),
    intent: &Intent,
    outcome: &mut Outcome,
) -> Child {
    let mut child = workload_child(plan, pods);
    let observed = (received, plan.current);
    outcome.behind(template::answer(&mut child, observed, intent));
    child
}

/// The workload the plan builds from the spec.
pub(super) fn workload_child(plan: &Plan<'_>, pods: Pods<'_>) -> Child {
    if plan.kind == ChildKind::StatefulSet {
        let layouts = plan.layouts.as_ref();
        Child::StatefulSet(Box::new(statefulset::build(pods, plan.replicas, layouts)))
    } else {
        Child::Deployment(Box::new(deployment::build(pods, plan.replicas)))
    }
}

/// The kinds to emit: the needed ones with the workload the plan builds (the Deployment when the
/// StatefulSet is asked for but not declared), plus the old kind while a workload is
/// `switching` kind (in any zone).
fn emitted(needed: &[ChildKind], plan: &Plan<'_>, switching: bool) -> Vec<ChildKind> {
    let mut kinds: Vec<ChildKind> = needed
        .iter()
        .map(|k| match k {
            ChildKind::Deployment | ChildKind::StatefulSet => plan.kind,
            other => *other,
        })
        .collect();
    if switching {
        kinds.push(workload::other(plan.kind));
    }
    kinds.sort();
    kinds
}

/// The server-list ConfigMap of the Memcached `name` in `namespace`, naming `members`.
fn config_map(name: &str, namespace: &str, e: &Effective<'_>, members: Members<'_>) -> Child {
    let list = servers::Servers {
        name,
        namespace,
        members,
        port: ports::for_clients(e),
        tls: e.security.tls.is_some(),
        proxy: e.proxy.is_some(),
    };
    Child::ConfigMap(Box::new(servers::build(&list)))
}

/// The zones a proxy Deployment each runs in: every zone of `spec.zones`, or one Deployment
/// without zones.
fn proxy_zones<'a>(e: &'a Effective<'_>) -> Vec<Option<crate::children::zone::Zone<'a>>> {
    match &e.zones {
        Some(z) => z
            .names
            .iter()
            .map(|zone| {
                Some(crate::children::zone::Zone {
                    name: zone,
                    topology_key: z.topology_key,
                })
            })
            .collect(),
        None => vec![None],
    }
}

/// The children of `spec.proxy`: its route configuration `<name>-proxy` (among the declared
/// `kinds`), whose pools list the same membership as the server lists; a proxy Deployment per
/// zone (or one, each with the reload agent of `agent_image`) when the CompositeController
/// declares Deployments; the Service `<name>-proxy`; with monitoring its ServiceMonitor, and with
/// a NetworkPolicy its own. The proxy reaches the pods on their plaintext port (validation refuses TLS
/// without one).
fn proxy_children(
    ((name, namespace), agent_image): ((&str, &str), &str),
    e: &Effective<'_>,
    layout: &Layout<'_>,
    (kinds, req): (&[ChildKind], &crate::hook::SyncRequest),
) -> Vec<Child> {
    let Some(wanted) = e.proxy else {
        return Vec::new();
    };
    let routes = proxy_config::Routes {
        name,
        namespace,
        members: layout.members(),
        port: ports::MEMCACHED.number,
    };
    let config = proxy_config::build(&routes);
    let mut out = Vec::new();
    if kinds.contains(&ChildKind::ConfigMap) {
        out.push(Child::ConfigMap(Box::new(config)));
    }
    let d = ChildKind::Deployment;
    if req.controller.declares(d.api_version(), d.resource()) {
        out.extend(proxy_zones(e).into_iter().map(|zone| {
            Child::Deployment(Box::new(proxy_pods::deployment(
                name,
                e,
                wanted,
                zone,
                agent_image,
            )))
        }));
    }
    let served = proxy_pods::served(e);
    let service = proxy_pods::service(name, &served, e.zones.is_some());
    out.push(Child::Service(Box::new(service)));
    let monitor = e
        .monitoring
        .as_ref()
        .and_then(|m| m.service_monitor.as_ref());
    if let Some(settings) = monitor
        && kinds.contains(&ChildKind::ServiceMonitor)
    {
        let monitor = proxy_pods::service_monitor(name, namespace, settings);
        out.push(Child::ServiceMonitor(Box::new(monitor)));
    }
    if let Some(sources) = e.security.network_policy
        && kinds.contains(&ChildKind::NetworkPolicy)
    {
        let pods = proxy_pods::peer(name).pod_selector.unwrap_or_default();
        let policy_name = proxy_pods::workload_name(name, None);
        let policy = network_policy::for_proxy(policy_name, pods, &served, sources);
        out.push(Child::NetworkPolicy(Box::new(policy)));
    }
    out
}
