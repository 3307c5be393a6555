//! Turning `spec.zones` on or off, or changing the zone names: the same safe switch as between
//! a Deployment and a StatefulSet. A workload whose name the spec no longer asks for (`<name>`
//! with zones, `<name>-<zone>` without them or for a zone no longer named) is *leaving*: it is
//! kept exactly as observed, with its disruption budget, until every workload the spec asks for
//! is observed and settled ([`ObservedChild::settled`]). The first sync that finds them all settled
//! leaves the leaving workloads and their budgets out, and Metacontroller deletes them.

use crate::api::effective::Effective;
use crate::api::validation::Violation;
use crate::children::ChildKind;
use crate::children::servers::{Members, Shown};
use crate::hook::{Observed, ObservedChild};

use super::plan::Plan;
use super::switching::{Switching, ZoneSwitch, count, total};
use super::zones::Zoned;

/// A zone layout switch under way: the leaving workloads still serve.
pub struct Switch<'a> {
    /// The leaving workloads, kept as observed.
    pub leaving: Vec<&'a ObservedChild>,
    /// The leaving workloads' budgets (observed PDBs of the same names), kept as observed.
    pub budgets: Vec<&'a ObservedChild>,
    /// Which way the layout changes.
    way: ZoneSwitch,
}

impl<'a> Switch<'a> {
    /// The switch under way for the Memcached `name` whose valid spec plans `plan` (and, with
    /// `spec.zones`, `zoned`) over the observed `children`: `None` when no workload is leaving,
    /// or when every desired workload is observed and settled (the leaving ones then go).
    #[must_use]
    pub fn of(
        plan: &Plan<'a>,
        zoned: Option<&Zoned<'a>>,
        children: &'a Observed,
        name: &str,
    ) -> Option<Self> {
        let desired: Vec<(String, &Plan<'a>)> = match zoned {
            Some(z) => z
                .zones
                .iter()
                .map(|zp| (zp.zone.child_name(name), &zp.plan))
                .collect(),
            None => vec![(name.to_owned(), plan)],
        };
        let leaving: Vec<&ObservedChild> = children
            .iter()
            .filter(|c| is_workload(c, name) && !desired.iter().any(|(n, _)| *n == c.metadata.name))
            .collect();
        let settled = desired.iter().all(|(_, p)| {
            p.current
                .is_some_and(|c| c.settled(p.replicas.unwrap_or(1)))
        });
        if leaving.is_empty() || settled {
            return None;
        }
        let pdb = ChildKind::PodDisruptionBudget;
        let mut observed_budgets = std::collections::BTreeMap::new();
        for c in children {
            if c.api_version == pdb.api_version() && c.kind == pdb.kind() {
                observed_budgets
                    .entry(c.metadata.name.as_str())
                    .or_insert(c);
            }
        }
        let budgets = leaving
            .iter()
            .filter_map(|w| observed_budgets.get(w.metadata.name.as_str()).copied())
            .collect();
        let unzoned_leaving = leaving.iter().any(|w| w.metadata.name == name);
        let way = match zoned {
            Some(_) if unzoned_leaving => ZoneSwitch::On,
            Some(_) => ZoneSwitch::Names,
            None => ZoneSwitch::Off,
        };
        Some(Self {
            leaving,
            budgets,
            way,
        })
    }

    /// The switch for the status, joined with a switch between Deployment and StatefulSet
    /// (`kind_switch`) in some zone: the leaving workloads' ready pods still serve.
    #[must_use]
    pub fn state(&self, kind_switch: Option<Switching<'a>>) -> Switching<'a> {
        let ready = total(self.leaving.iter().map(|w| count(w.status.ready_replicas)));
        Switching {
            from: self
                .leaving
                .first()
                .map_or("Deployment", |w| w.kind.as_str()),
            ready: ready.saturating_add(kind_switch.map_or(0, |m| m.ready)),
            zones: Some(self.way),
        }
    }

    /// Who the server lists name during the switch, given what the new layout would (`new`): a
    /// StatefulSet without zones turning zones on keeps naming its pods; zones renamed keep the
    /// zones' own list; otherwise the Service, which selects the leaving and the new pods alike,
    /// while any pod serves.
    #[must_use]
    pub fn members<'m>(&self, new: Members<'m>) -> Members<'m> {
        let service = Members::Service(Shown::WhileServing);
        match (self.way, new) {
            (ZoneSwitch::Names, list @ (Members::Zones(..) | Members::Pods(_))) => list,
            (ZoneSwitch::On, _) => match self.leaving.first() {
                Some(old) if old.kind == ChildKind::StatefulSet.kind() => {
                    Members::Pods(old.spec.replicas.unwrap_or(1))
                }
                _ => service,
            },
            _ => service,
        }
    }
}

/// What the switch cannot do for the valid spec `e` of the Memcached `name` over the observed
/// `children`: hand the zones' pods over to a workload the HorizontalPodAutoscaler sizes (it
/// would start with one pod and end the switch there), so turning zones off and autoscaling on
/// is refused while a zone's workload runs; the observed children are kept.
#[must_use]
pub fn violations(e: &Effective<'_>, children: &Observed, name: &str) -> Vec<Violation> {
    let prefix = format!("{name}-");
    let zone_running = children
        .iter()
        .find(|c| is_workload(c, name) && c.metadata.name.starts_with(&prefix));
    match zone_running {
        Some(w) if e.zones.is_none() && e.autoscaling.is_some() => vec![Violation::invalid(
            "spec.autoscaling.enabled",
            true,
            format!(
                "cannot turn autoscaling on while the zone {} {} runs: turn zones off first and \
                 enable autoscaling once the switch has ended",
                w.kind, w.metadata.name
            ),
        )],
        _ => Vec::new(),
    }
}

/// An apps/v1 Deployment or StatefulSet of the cache: not one of the proxy's Deployments.
fn is_workload(c: &ObservedChild, name: &str) -> bool {
    c.api_version == "apps/v1"
        && (c.kind == ChildKind::Deployment.kind() || c.kind == ChildKind::StatefulSet.kind())
        && !(c.kind == ChildKind::Deployment.kind()
            && crate::children::proxy_pods::is_workload_name(name, &c.metadata.name))
}
