//! What the status is computed from: the spec, the layout of the cache and what the sync built.

use crate::api::effective::Effective;
use crate::children::ports;
use crate::children::servers::Members;
use crate::hook::{ChildStatus, SyncRequest};
use crate::status::{Inputs, Spec, proxies};
use crate::workload::Layout;

use super::Outcome;

/// The status inputs of a sync that built `outcome`.
pub(super) fn inputs<'a>(
    req: &'a SyncRequest,
    e: &'a Effective<'a>,
    layout: &'a Layout<'a>,
    outcome: Outcome,
    agent_image: &'a str,
) -> Inputs<'a> {
    let parent = &req.parent;
    let name = parent.metadata.name.as_str();
    let namespace = parent.metadata.namespace.as_deref().unwrap_or_default();
    let plan = &layout.plan;
    // Kept children are judged against what they run, not against the rejected spec.
    let kept = outcome.invalid_spec.is_some();
    let creating = !kept && layout.creating(parent.status.conditions.is_empty());
    let switching = layout.switch_state();
    let spec_replicas = spec_replicas(req, e, layout, kept);
    let client_port = ports::for_clients(e);
    let at = (name, namespace, client_port);
    let budgets = outcome.zones.budgets.as_ref();
    let zones = layout.zones.as_ref();
    let zones = zones.map(|z| (z.status(at, budgets, creating), z.replicas));
    let (zones, zone_replicas) = zones.unwrap_or_default();
    Inputs {
        name,
        namespace,
        generation: parent.metadata.generation,
        spec_replicas,
        autoscaling: !kept && e.autoscaling.is_some(),
        workload_kind: plan.kind,
        // The first sync creates the workloads: their conditions read as they will once they
        // are observed without a status, so the sync after their creation writes no second
        // status (a later sync that still finds none says it waits for them).
        workload: layout
            .observed(outcome.zones.outdated.as_deref())
            .or_else(|| creating.then(ChildStatus::default)),
        switching,
        // The first sync lists the pods it is creating, so the next writes no second status.
        server_list: match layout.members() {
            Members::Planned(n) if creating => Members::Pods(n),
            list => list,
        },
        missing_secrets: outcome.missing_secrets,
        invalid_spec: outcome.invalid_spec,
        pdb: outcome.pdb,
        missing_kinds: outcome.missing_kinds,
        keep_previous: kept,
        client_port: Some(client_port).filter(|p| *p != ports::MEMCACHED.number),
        tls: e.security.tls.is_some(),
        spec: (!kept).then_some(Spec {
            effective: e,
            plan,
            related: &req.related,
            agent_image,
        }),
        zones,
        zone_replicas,
        zone_budgets: outcome.zones.budgets,
        behind: outcome.behind,
        taken: outcome.taken,
        proxy: proxies::of((name, namespace), e, &req.children),
    }
}

/// The desired count of pods, over every zone; for kept children (`kept`), the observed one.
fn spec_replicas(
    req: &SyncRequest,
    e: &Effective<'_>,
    layout: &Layout<'_>,
    kept: bool,
) -> Option<i32> {
    let plan = &layout.plan;
    match &layout.zones {
        // The desired count is the count per zone times the zones.
        Some(z) => Some(
            z.replicas
                .saturating_mul(i32::try_from(z.zones.len()).unwrap_or(0)),
        ),
        None if kept => plan
            .current
            .map(|d| d.spec.replicas.or(d.status.replicas).unwrap_or(1)),
        // The new workload starts at the size the HPA chose for the old one.
        None if plan.switching_from().is_some() && e.autoscaling.is_some() => plan.replicas,
        None => req.parent.spec.replicas,
    }
}
