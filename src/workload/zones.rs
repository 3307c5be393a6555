//! `spec.zones`: a workload plan per zone, the zones' budgets from what is observed, and what
//! the zones' workloads say together.

use k8s_openapi::jiff::Timestamp;

use crate::api::ZoneStatus;
use crate::api::effective::Effective;
use crate::api::zones::Zones;
use crate::children::ChildKind;
use crate::children::servers::{self, Members, Shown};
use crate::children::zone::Zone;
use crate::hook::{ChildStatus, Observed, ZoneShort};

use super::budgets::{Budgets, ZoneFacts, decide};
use super::members::members;
use super::plan::Plan;
use super::switching::{Switching, count, total};

/// One zone and the plan of its workload `<name>-<zone>`.
pub struct ZonePlan<'a> {
    /// The zone.
    pub zone: Zone<'a>,
    /// Its workload's plan (a switch between Deployment and StatefulSet runs zone by zone).
    pub plan: Plan<'a>,
}

/// What the zones' budgets read besides the spec and the observed children: the parent's status
/// as the last sync wrote it, and the time of this one.
#[derive(Clone, Copy, Debug)]
pub struct Before<'a> {
    /// The zones were starting at the last sync (not every zone has been whole once yet).
    pub starting: bool,
    /// `status.zones` as the last sync wrote it: since when each zone is short.
    pub zones: &'a [ZoneShort],
    /// This sync's time.
    pub now: Timestamp,
}

impl Before<'_> {
    /// Since when the zone `name`, short now, is short: as the last sync recorded it (written
    /// back as it was read), else now. A time that does not parse, or lies ahead, starts the
    /// clock again: the zone blocks longer, never shorter.
    fn short_since(&self, name: &str) -> (String, Timestamp) {
        let now = Timestamp::from_second(self.now.as_second()).unwrap_or(self.now);
        self.zones
            .iter()
            .find(|z| z.name == name)
            .and_then(|z| z.short_since.as_deref())
            .and_then(|text| Some((text.to_owned(), text.parse::<Timestamp>().ok()?)))
            .filter(|(_, since)| *since <= self.now)
            .unwrap_or_else(|| (now.to_string(), now))
    }
}

/// The zones of a Memcached with `spec.zones`.
pub struct Zoned<'a> {
    /// Each zone, in spec order.
    pub zones: Vec<ZonePlan<'a>>,
    /// The zone names, in spec order.
    pub names: &'a [&'a str],
    /// The pods each zone should have.
    pub replicas: i32,
    /// With a disruption budget: each zone's.
    pub budgets: Option<Budgets>,
    /// With a disruption budget: since when each zone is short (`None` while it is whole).
    pub short_since: Vec<Option<String>>,
    /// With a disruption budget: in how many seconds the first short zone that is not lost yet
    /// will be (the sync asks Metacontroller to sync again then: nothing else may change).
    pub next_loss_seconds: Option<i64>,
}

impl<'a> Zoned<'a> {
    /// The zones of the valid spec `e` for the Memcached `name` over the observed `children`;
    /// `None` without `spec.zones`. `statefulsets` as for [`Plan::new`]; `before`: what the last
    /// sync wrote and this sync's time.
    #[must_use]
    pub fn of(
        e: &'a Effective<'a>,
        children: &'a Observed,
        (name, statefulsets): (&str, bool),
        before: Before<'_>,
    ) -> Option<Self> {
        let Zones {
            names,
            topology_key,
            outage_timeout_seconds,
        } = e.zones.as_ref()?;
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
        let mut short_since = Vec::new();
        let mut next_loss = None;
        let budgets = e.high_availability.pdb.as_ref().map(|_| {
            let facts: Vec<ZoneFacts> = zones
                .iter()
                .map(|z| {
                    let budget =
                        children.find(pdb.api_version(), pdb.kind(), &z.zone.child_name(name));
                    let mut facts = ZoneFacts::observe(z.plan.current, replicas, budget);
                    let since = facts.short.then(|| before.short_since(z.zone.name));
                    if let Some((_, at)) = &since {
                        let short_for = before.now.as_second().saturating_sub(at.as_second());
                        let left = i64::from(*outage_timeout_seconds).saturating_sub(short_for);
                        facts.lost = left <= 0;
                        if left > 0 {
                            next_loss = Some(next_loss.map_or(left, |n: i64| n.min(left)));
                        }
                    }
                    short_since.push(since.map(|(text, _)| text));
                    facts
                })
                .collect();
            decide(&facts, before.starting)
        });
        Some(Self {
            zones,
            names,
            replicas,
            budgets,
            short_since,
            next_loss_seconds: next_loss,
        })
    }

    /// Whether any zone switches between Deployment and StatefulSet.
    #[must_use]
    pub fn switching(&self) -> bool {
        self.zones.iter().any(|z| z.plan.switching_from().is_some())
    }

    /// Whether any zone's workload, or the old workload of a zone's switch, is observed.
    #[must_use]
    pub fn observed_any(&self) -> bool {
        self.zones
            .iter()
            .any(|z| z.plan.current.is_some() || z.plan.switching_from().is_some())
    }

    /// The observed workloads of the zones, counted together; `None` when none is observed.
    /// `outdated[i]`: zone `i`'s workload does not carry the desired pod template yet (the
    /// rollout holds it back, or gives it the template in this sync), so its pods count as
    /// running but none as updated: the status reads as progressing until the last zone has
    /// rolled out.
    #[must_use]
    pub fn observed(&self, outdated: Option<&[bool]>) -> Option<ChildStatus> {
        let observed: Vec<(&ChildStatus, bool)> = self
            .zones
            .iter()
            .enumerate()
            .filter_map(|(i, z)| {
                let outdated = outdated.and_then(|o| o.get(i)) == Some(&true);
                Some((&z.plan.current?.status, outdated))
            })
            .collect();
        if observed.is_empty() {
            return None;
        }
        let sum = |f: &dyn Fn(&(&ChildStatus, bool)) -> Option<i32>| {
            Some(total(observed.iter().map(|s| count(f(s)))))
        };
        Some(ChildStatus {
            replicas: sum(&|(s, _)| s.replicas),
            ready_replicas: sum(&|(s, _)| s.ready_replicas),
            updated_replicas: sum(&|(s, outdated)| {
                if *outdated { None } else { s.updated_replicas }
            }),
            ..ChildStatus::default()
        })
    }

    /// The switch between Deployment and StatefulSet under way in any zone: the old workloads'
    /// kind and ready pods together.
    #[must_use]
    pub fn switch_state(&self) -> Option<Switching<'a>> {
        let old: Vec<_> = self
            .zones
            .iter()
            .filter_map(|z| z.plan.switching_from())
            .collect();
        let first = old.first()?;
        Some(Switching {
            from: first.kind.as_str(),
            ready: total(old.iter().map(|o| count(o.status.ready_replicas))),
            zones: None,
        })
    }

    /// Who the lists name: the Service as without zones, or every zone's pods.
    #[must_use]
    pub fn members(&self) -> Members<'a> {
        let service = |shown| Members::Service(shown);
        let lists: Vec<Members<'_>> = self
            .zones
            .iter()
            .map(|z| members(&z.plan, z.plan.switching_from()))
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
    #[must_use]
    pub fn status(
        &self,
        (name, namespace, port): (&str, &str, i32),
        budgets: Option<&Budgets>,
        creating: bool,
    ) -> Vec<ZoneStatus> {
        self.zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let ready = count(z.plan.current.and_then(|c| c.status.ready_replicas));
                let workload = z.zone.child_name(name);
                let servers = match members(&z.plan, z.plan.switching_from()) {
                    Members::Pods(n) => servers::pod_addresses(&workload, name, namespace, n, port),
                    Members::Planned(n) if creating => {
                        servers::pod_addresses(&workload, name, namespace, n, port)
                    }
                    _ => Vec::new(),
                };
                ZoneStatus {
                    name: z.zone.name.to_owned(),
                    ready_replicas: (ready != 0).then_some(ready),
                    server_list: (!servers.is_empty()).then_some(servers),
                    disruption_allowed: budgets.and_then(|b| b.open.get(i).copied()),
                    short_since: self.short_since.get(i).cloned().flatten(),
                }
            })
            .collect()
    }
}
