//! `spec.zones` in a sync: a workload plan per zone, the zones' budgets from what is observed,
//! and what the status says of each zone.

use crate::api::ZoneStatus;
use crate::api::effective::Effective;
use crate::api::zones::Zones;
use crate::children::servers::{Members, Shown};
use crate::children::zone::Zone;
use crate::children::{ChildKind, statefulset};
use crate::hook::{ChildStatus, SyncRequest};
use crate::status::{self, Migration};
use crate::workload::Plan;
use crate::workload::budgets::{Budgets, ZoneFacts, decide};

use super::members::{config_map, members};
use super::{Outcome, SyncError, kept_old_workload, pdb_state, workload_child};
use crate::children::pdb;
use crate::children::pod::Pods;
use crate::hook::{Child, ObservedChild, Received};
use crate::keep;
use crate::workload::rollout::{self, ZoneState};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

/// One zone and the plan of its workload `<name>-<zone>`.
pub(super) struct ZonePlan<'a> {
    /// The zone.
    pub(super) zone: Zone<'a>,
    /// Its workload's plan (a switch between Deployment and StatefulSet runs zone by zone).
    pub(super) plan: Plan<'a>,
}

/// The zones of a Memcached with `spec.zones`.
pub(super) struct Zoned<'a> {
    /// Each zone, in spec order.
    pub(super) zones: Vec<ZonePlan<'a>>,
    /// The zone names, in spec order.
    pub(super) names: &'a [&'a str],
    /// The pods each zone should have.
    pub(super) replicas: i32,
    /// With a disruption budget: each zone's.
    pub(super) budgets: Option<Budgets>,
}

impl<'a> Zoned<'a> {
    /// The zones of the valid spec `e` for the Memcached `name` of `req`; `None` without
    /// `spec.zones`. `statefulsets` as for [`Plan::new`].
    pub(super) fn of(
        e: &'a Effective<'a>,
        req: &'a SyncRequest,
        (name, statefulsets): (&str, bool),
    ) -> Option<Self> {
        let Zones {
            names,
            topology_key,
        } = e.zones.as_ref()?;
        let children = &req.children;
        let replicas = e.replicas.unwrap_or(1);
        let zones: Vec<ZonePlan<'a>> = names
            .iter()
            .map(|zone| {
                let zone = Zone {
                    name: zone,
                    topology_key,
                };
                let plan = Plan::new(e, children, &zone.child_name(name), statefulsets, true);
                ZonePlan { zone, plan }
            })
            .collect();
        let pdb = ChildKind::PodDisruptionBudget;
        let budgets = e.high_availability.pdb.as_ref().map(|_| {
            let facts: Vec<ZoneFacts> = zones
                .iter()
                .map(|z| {
                    let budget =
                        children.find(pdb.api_version(), pdb.kind(), &z.zone.child_name(name));
                    ZoneFacts::observe(z.plan.current, replicas, budget)
                })
                .collect();
            decide(
                &facts,
                status::zones::were_starting(&req.parent.status.conditions),
            )
        });
        Some(Self {
            zones,
            names,
            replicas,
            budgets,
        })
    }

    /// Whether any zone switches between Deployment and StatefulSet.
    pub(super) fn migrating(&self) -> bool {
        self.zones.iter().any(|z| z.plan.migrating_from().is_some())
    }

    /// The observed workloads of the zones, counted together; `None` when none is observed.
    /// A zone whose workload does not carry the desired pod template (`current[i]` false: the
    /// rollout holds it back) counts no updated pod, so the status reads as progressing until
    /// the last zone has rolled out.
    pub(super) fn workload(&self, current: Option<&[bool]>) -> Option<ChildStatus> {
        let observed: Vec<ChildStatus> = self
            .zones
            .iter()
            .enumerate()
            .filter_map(|(i, z)| {
                let mut status = z.plan.current?.status.clone();
                if current.and_then(|c| c.get(i)) == Some(&false) {
                    status.updated_replicas = None;
                }
                Some(status)
            })
            .collect();
        if observed.is_empty() {
            return None;
        }
        let sum = |f: fn(&ChildStatus) -> Option<i32>| {
            Some(observed.iter().map(|s| f(s).unwrap_or(0)).sum())
        };
        Some(ChildStatus {
            replicas: sum(|s| s.replicas),
            ready_replicas: sum(|s| s.ready_replicas),
            updated_replicas: sum(|s| s.updated_replicas),
            ..ChildStatus::default()
        })
    }

    /// The switch under way in any zone: the old workloads' kind and ready pods together.
    pub(super) fn migration(&self) -> Option<Migration<'a>> {
        let old: Vec<_> = self
            .zones
            .iter()
            .filter_map(|z| z.plan.migrating_from())
            .collect();
        let first = old.first()?;
        Some(Migration {
            from: first.kind.as_str(),
            ready: old
                .iter()
                .map(|o| o.status.ready_replicas.unwrap_or(0))
                .sum(),
            zones: None,
        })
    }

    /// Who the lists name: the Service as without zones, or every zone's pods.
    pub(super) fn members(&self) -> Members<'a> {
        let service = |shown| Members::Service(shown);
        let lists: Vec<Members<'_>> = self
            .zones
            .iter()
            .map(|z| members(&z.plan, z.plan.migrating_from()))
            .collect();
        if lists.contains(&service(Shown::WhileServing)) {
            service(Shown::WhileServing)
        } else if lists.iter().all(|l| *l == service(Shown::WhenReady)) {
            service(Shown::WhenReady)
        } else {
            Members::Zones(self.names, self.replicas)
        }
    }

    /// Each zone's status entry in the Memcached `name` of `namespace`, its servers on `port`;
    /// `budgets` as emitted. On the first sync (`creating`) a StatefulSet zone lists the pods it
    /// is creating, so the next sync writes no second status.
    pub(super) fn status(
        &self,
        (name, namespace, port): (&str, &str, i32),
        budgets: Option<&Budgets>,
        creating: bool,
    ) -> Vec<ZoneStatus> {
        self.zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let ready = z
                    .plan
                    .current
                    .and_then(|c| c.status.ready_replicas)
                    .unwrap_or(0);
                let workload = z.zone.child_name(name);
                let servers = match members(&z.plan, z.plan.migrating_from()) {
                    Members::Pods(n) => {
                        statefulset::zone_server_list(&workload, name, namespace, n, port)
                    }
                    Members::Planned(n) if creating => {
                        statefulset::zone_server_list(&workload, name, namespace, n, port)
                    }
                    _ => Vec::new(),
                };
                ZoneStatus {
                    name: z.zone.name.to_owned(),
                    ready_replicas: (ready != 0).then_some(ready),
                    server_list: (!servers.is_empty()).then_some(servers),
                    disruption_allowed: budgets.and_then(|b| b.open.get(i).copied()),
                }
            })
            .collect()
    }
}

/// The children of `kind` the zones of `z` answer (each zone's workload, old workload during a
/// switch, or budget; the server-list ConfigMap of every zone), pushed on `children`; `false`
/// when `kind` is not one of them.
pub(super) fn zone_children(
    kind: ChildKind,
    z: &Zoned<'_>,
    (received, name, e, pods): (&Received<'_>, &str, &Effective<'_>, Pods<'_>),
    children: &mut Vec<Child>,
    outcome: &mut Outcome,
) -> Result<bool, SyncError> {
    match kind {
        ChildKind::Deployment | ChildKind::StatefulSet => {
            let (workloads, current) = rolled_out(z, pods, received)?;
            outcome.zones.current = Some(current);
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
        ChildKind::ConfigMap => {
            let namespace = received.request().parent.metadata.namespace.as_deref();
            let namespace = namespace.unwrap_or_default();
            children.push(config_map(name, namespace, e, z.members()));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Each zone's workload built from the spec, the zones' pod templates rolled out one zone at a
/// time ([`rollout::given`]): a zone held back keeps the template it is observed with,
/// everything else of the spec applies to it at once. Each workload records the hash of the
/// template it gets ([`rollout::ANNOTATION`]). With the workloads, whether each zone's
/// observed workload carries the desired template already.
fn rolled_out(
    z: &Zoned<'_>,
    pods: Pods<'_>,
    received: &Received<'_>,
) -> Result<(Vec<Child>, Vec<bool>), SyncError> {
    let mut built: Vec<(Child, String)> = z
        .zones
        .iter()
        .map(|zp| {
            let pods = Pods {
                zone: Some(zp.zone),
                ..pods
            };
            let mut child = workload_child(&zp.plan, pods);
            let hash = template_mut(&mut child)
                .map(|t| rollout::template_hash(t))
                .unwrap_or_default();
            (child, hash)
        })
        .collect();
    let states: Vec<ZoneState> = z
        .zones
        .iter()
        .zip(&built)
        .map(|(zp, (_, hash))| zone_state(zp, hash))
        .collect();
    let given = rollout::given(&states);
    let current = states
        .iter()
        .map(|s| matches!(s, ZoneState::Observed { current: true, .. }))
        .collect();
    for ((zp, (child, hash)), given) in z.zones.iter().zip(&mut built).zip(given) {
        let recorded = match zp.plan.current {
            Some(current) if !given => {
                let held = keep::observed_template(received, current).ok_or_else(|| {
                    SyncError::CannotHoldZone {
                        kind: zp.plan.kind.kind(),
                        name: current.metadata.name.clone(),
                    }
                })?;
                let recorded =
                    observed_hash(current).unwrap_or_else(|| rollout::template_hash(&held));
                if let Some(t) = template_mut(child) {
                    *t = held;
                }
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
    Ok((built.into_iter().map(|(child, _)| child).collect(), current))
}

/// The rollout state of the zone `zp` whose desired pod template hashes to `desired`.
fn zone_state(zp: &ZonePlan<'_>, desired: &str) -> ZoneState {
    let Some(current) = zp.plan.current else {
        return ZoneState::Missing;
    };
    ZoneState::Observed {
        current: observed_hash(current).is_some_and(|h| h == desired),
        settled: current.settled(zp.plan.replicas.unwrap_or(1)),
    }
}

/// The hash of the pod template the observed workload carries: its annotation, else (a workload
/// from before the annotation) the hash of the template it was last given.
fn observed_hash(child: &ObservedChild) -> Option<String> {
    child
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.template_hash.clone())
        .or_else(|| keep::last_applied_template(child).map(|t| rollout::template_hash(&t)))
}

/// The pod template of a built workload.
fn template_mut(child: &mut Child) -> Option<&mut PodTemplateSpec> {
    match child {
        Child::Deployment(d) => d.spec.as_mut().map(|s| &mut s.template),
        Child::StatefulSet(s) => s.spec.as_mut().map(|s| &mut s.template),
        _ => None,
    }
}

/// The metadata of a built workload.
fn metadata_mut(child: &mut Child) -> Option<&mut ObjectMeta> {
    match child {
        Child::Deployment(d) => Some(&mut d.metadata),
        Child::StatefulSet(s) => Some(&mut s.metadata),
        _ => None,
    }
}
