//! What the status is computed from: the spec, the plan of the workload (and of the zones and
//! a zone layout switch) and what the sync built.

use crate::api::effective::Effective;
use crate::children::ports;
use crate::children::servers::Members;
use crate::hook::{ChildStatus, SyncRequest};
use crate::status::{Inputs, Migration, Spec};
use crate::workload::Plan;

use super::members::members;
use super::switch::Switch;
use super::zones::Zoned;
use super::{Outcome, ZoneOutcome};

/// The status inputs of a sync that built `outcome`.
pub(super) fn inputs<'a>(
    req: &'a SyncRequest,
    e: &'a Effective<'a>,
    (plan, zoned, switch): (&'a Plan<'a>, Option<&Zoned<'a>>, Option<&Switch<'a>>),
    outcome: Outcome,
    agent_image: &'a str,
) -> Inputs<'a> {
    let parent = &req.parent;
    let name = parent.metadata.name.as_str();
    let namespace = parent.metadata.namespace.as_deref().unwrap_or_default();
    let observed = plan.current;
    let migrating_from = plan.migrating_from();
    // Kept children are judged against what they run, not against the rejected spec.
    let kept = outcome.invalid_spec.is_some();
    let creating = !kept
        && switch.is_none()
        && observed.is_none()
        && migrating_from.is_none()
        && parent.status.conditions.is_empty();
    let spec_replicas = if kept {
        observed.map(|d| d.spec.replicas.or(d.status.replicas).unwrap_or(1))
    } else if migrating_from.is_some() && e.autoscaling.is_some() {
        // The new workload starts at the size the HPA chose for the old one.
        plan.replicas
    } else {
        parent.spec.replicas
    };
    let client_port = ports::for_clients(e);
    let inputs = Inputs {
        name,
        namespace,
        generation: parent.metadata.generation,
        spec_replicas,
        autoscaling: !kept && e.autoscaling.is_some(),
        workload_kind: plan.kind,
        // The first sync creates the workload: its conditions read as they will once it is
        // observed without a status, so the sync after its creation writes no second status
        // (a later sync that still finds none says it waits for it).
        workload: observed
            .map(|d| d.status.clone())
            .or_else(|| creating.then(ChildStatus::default)),
        migration: migrating_from.map(|old| Migration {
            from: old.kind.as_str(),
            ready: old.status.ready_replicas.unwrap_or(0),
            zones: None,
        }),
        // The first sync lists the pods it is creating, so the next writes no second status.
        server_list: match members(plan, migrating_from) {
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
        zones: Vec::new(),
        zone_replicas: 0,
        zone_budgets: None,
    };
    if kept {
        return inputs;
    }
    layout_inputs(inputs, (zoned, switch), client_port, outcome.zones)
}

/// `inputs` of a valid spec with its zones (`zoned`) and the switch of the zone layout under way.
fn layout_inputs<'a>(
    inputs: Inputs<'a>,
    (zoned, switch): (Option<&Zoned<'a>>, Option<&Switch<'a>>),
    port: i32,
    built: ZoneOutcome,
) -> Inputs<'a> {
    let inputs = match zoned {
        Some(z) => zoned_inputs(inputs, z, port, (built, switch.is_some())),
        None => inputs,
    };
    match switch {
        Some(s) => Inputs {
            migration: Some(s.migration(inputs.migration)),
            server_list: s.members(inputs.server_list),
            ..inputs
        },
        None => inputs,
    }
}

/// `inputs` of a Memcached with `spec.zones`: its zones counted together (the desired count is
/// `replicas` times the zones), and each zone; `zones` as the zones' children say.
fn zoned_inputs<'a>(
    inputs: Inputs<'a>,
    z: &Zoned<'a>,
    port: i32,
    (zones, switching): (ZoneOutcome, bool),
) -> Inputs<'a> {
    let workload = z.workload(zones.current.as_deref());
    let migration = z.migration();
    // `inputs` (for the workload `<name>`, which zones never build) read as creating exactly when
    // the parent has no conditions yet; the zones are created when none of theirs is observed.
    // During a zone layout switch the observed `<name>` is the workload leaving.
    let creating =
        !switching && workload.is_none() && migration.is_none() && inputs.workload.is_some();
    let at = (inputs.name, inputs.namespace, port);
    Inputs {
        spec_replicas: Some(
            z.replicas
                .saturating_mul(i32::try_from(z.zones.len()).unwrap_or(0)),
        ),
        workload: workload.or_else(|| creating.then(ChildStatus::default)),
        migration,
        server_list: z.members(),
        zones: z.status(at, zones.budgets.as_ref(), creating),
        zone_replicas: z.replicas,
        zone_budgets: zones.budgets,
        ..inputs
    }
}
