//! The children of `spec.zones`: each zone's workload, its pod template rolled out zone by zone,
//! and each zone's budget.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::effective::Effective;
use crate::children::ChildKind;
use crate::children::pdb;
use crate::children::pod::Pods;
use crate::hook::{Child, ObservedChild, Received};
use crate::keep;
use crate::workload::rollout::{self, ZoneState};
use crate::workload::{ZonePlan, Zoned};

use super::template::{self, Intent, metadata_mut, selector_labels, template, template_mut};
use super::{Outcome, SyncError, kept_old_workload, pdb_state, workload_child};

/// The children of `kind` the zones of `z` answer (each zone's workload, old workload during a
/// switch, or budget), pushed on `children`; `false` when `kind` is not one of them.
pub(super) fn zone_children(
    kind: ChildKind,
    z: &Zoned<'_>,
    (received, name, e, pods): (&Received<'_>, &str, &Effective<'_>, Pods<'_>),
    intent: &Intent,
    children: &mut Vec<Child>,
    outcome: &mut Outcome,
) -> Result<bool, SyncError> {
    match kind {
        ChildKind::Deployment | ChildKind::StatefulSet => {
            let (workloads, outdated) = rolled_out(z, pods, (received, intent), outcome)?;
            outcome.zones.outdated = Some(outdated);
            for (zp, workload) in z.zones.iter().zip(workloads) {
                if kind == zp.plan.kind {
                    children.push(workload);
                } else if let Some(old) = kept_old_workload(kind, &zp.plan, received)? {
                    children.push(old);
                }
            }
        }
        ChildKind::PodDisruptionBudget => {
            let (Some(wanted), Some(budgets)) = (e.high_availability.pdb.as_ref(), &z.budgets)
            else {
                return Ok(true);
            };
            for (zp, open) in z.zones.iter().zip(&budgets.open) {
                children.push(Child::PodDisruptionBudget(Box::new(pdb::build_zone(
                    name, zp.zone, wanted, *open,
                ))));
            }
            outcome.pdb = Some(pdb_state(&format!("{name}-<zone>"), &wanted.budget, e));
            outcome.zones.budgets = Some(budgets.clone());
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Each zone's workload built from the spec, the zones' pod templates rolled out one zone at a
/// time ([`rollout::given`]): a zone held back keeps the template it is observed with,
/// everything else of the spec applies to it at once. Each workload records the hash of the
/// template it gets ([`rollout::ANNOTATION`]). A held template is answered with the labels its
/// workload's selector asks for, so that the selector always matches it. With the workloads,
/// which zones' observed workloads do not carry the desired template yet.
fn rolled_out(
    z: &Zoned<'_>,
    pods: Pods<'_>,
    (received, intent): (&Received<'_>, &Intent),
    outcome: &mut Outcome,
) -> Result<(Vec<Child>, Vec<bool>), SyncError> {
    let mut built: Vec<(Child, String)> = z
        .zones
        .iter()
        .map(|zp| zone_workload(zp, (received, pods), intent, outcome))
        .collect();
    let states: Vec<ZoneState> = z
        .zones
        .iter()
        .zip(&built)
        .map(|(zp, (child, hash))| zone_state(zp, hash, template(child)))
        .collect();
    let given = rollout::given(&states);
    let outdated = states
        .iter()
        .map(|s| matches!(s, ZoneState::Observed { current: false, .. }))
        .collect();
    for ((zp, (child, hash)), given) in z.zones.iter().zip(&mut built).zip(given) {
        let recorded = match zp.plan.current {
            Some(current) if !given => {
                let held = template::answered(received, current)
                    .or_else(|| keep::observed_template(received, current));
                let mut held = held.ok_or_else(|| SyncError::CannotHoldZone {
                    kind: zp.plan.kind.kind(),
                    name: current.metadata.name.clone(),
                })?;
                let recorded =
                    observed_hash(current).unwrap_or_else(|| rollout::template_hash(&held));
                let selected = selector_labels(child);
                let labels = held.metadata.get_or_insert_with(ObjectMeta::default);
                labels
                    .labels
                    .get_or_insert_with(BTreeMap::new)
                    .extend(selected);
                if let Some(t) = template_mut(child) {
                    *t = held;
                }
                template::record_observed(child, current);
                recorded
            }
            _ => std::mem::take(hash),
        };
        if let Some(meta) = metadata_mut(child) {
            meta.annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(rollout::ANNOTATION.to_owned(), recorded);
        }
    }
    Ok((
        built.into_iter().map(|(child, _)| child).collect(),
        outdated,
    ))
}

/// The workload of the zone `zp` with the pod template its owner's intent gives it
/// ([`template::answer`]), and the hash of that template.
fn zone_workload(
    zp: &ZonePlan<'_>,
    (received, pods): (&Received<'_>, Pods<'_>),
    intent: &Intent,
    outcome: &mut Outcome,
) -> (Child, String) {
    let pods = Pods {
        zone: Some(zp.zone),
        ..pods
    };
    let mut child = workload_child(&zp.plan, pods);
    let observed = (received, zp.plan.current);
    outcome.behind(template::answer(&mut child, observed, intent));
    let hash = template_mut(&mut child)
        .map(|t| rollout::template_hash(t))
        .unwrap_or_default();
    (child, hash)
}

/// The rollout state of the zone `zp` whose desired pod template `template` hashes to `desired`.
fn zone_state(zp: &ZonePlan<'_>, desired: &str, template: Option<&PodTemplateSpec>) -> ZoneState {
    let Some(current) = zp.plan.current else {
        return ZoneState::Missing;
    };
    // The template last given decides; without one, the annotation where the containers agree.
    let carries = match keep::last_applied_template(current) {
        Some(applied) => rollout::template_hash(&applied) == desired,
        None => annotation(current) == Some(desired) && containers_agree(current, template),
    };
    ZoneState::Observed {
        current: carries,
        settled: current.settled(zp.plan.replicas.unwrap_or(1)),
    }
}

/// The hash of the pod template the observed workload carries: the hash of the template it was
/// last given (its last-applied annotation), which an edited [`rollout::ANNOTATION`] cannot
/// change; without one (another apply method), the annotation.
fn observed_hash(child: &ObservedChild) -> Option<String> {
    keep::last_applied_template(child)
        .map(|t| rollout::template_hash(&t))
        .or_else(|| annotation(child).map(str::to_owned))
}

/// The observed workload's [`rollout::ANNOTATION`].
fn annotation(child: &ObservedChild) -> Option<&str> {
    let annotations = child.metadata.annotations.as_ref();
    annotations.and_then(|a| a.template_hash.as_deref())
}

/// Whether the observed workload's containers (names and arguments, as the API server holds
/// them) are those of `template`: without a last-applied template, the annotation is trusted
/// only where the template it names agrees with what the workload runs.
fn containers_agree(child: &ObservedChild, template: Option<&PodTemplateSpec>) -> bool {
    let observed = child.spec.template.as_ref().and_then(|t| t.spec.as_ref());
    let observed = observed.map(|s| &s.containers[..]).unwrap_or_default();
    let wanted = template.and_then(|t| t.spec.as_ref());
    let wanted = wanted.map(|s| &s.containers[..]).unwrap_or_default();
    observed.len() == wanted.len()
        && observed
            .iter()
            .zip(wanted)
            .all(|(o, w)| o.name == w.name && o.args == w.args)
}
