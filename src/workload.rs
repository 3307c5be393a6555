//! The layout of a cache: which workloads run its pods (a Deployment or a StatefulSet, one per
//! zone with `spec.zones`), the switch from the layout observed to the one the spec asks for,
//! the zones' budgets and rollout order, and who the server lists name. Everything is derived
//! from the spec and the observed children, never from the parent's status (which may be
//! stale); only whether the zones were starting, and since when a zone is short, are read from
//! the status the hook wrote ([`Before`]).
//!
//! One [`Layout`] per sync carries it: the builders in `sync` read it to answer the children,
//! the status reads its facts ([`Layout::creating`], [`Layout::members`],
//! [`Layout::switch_state`], [`Layout::observed`]) and phrases them.

use crate::api::effective::Effective;
use crate::children::servers::Members;
use crate::hook::{ChildStatus, Observed};

pub mod budgets;
pub mod intent;
mod members;
mod plan;
pub mod rollout;
mod switch;
mod switching;
mod zones;

use members::members;
pub use plan::{Plan, other};
pub use switch::{Switch, violations};
pub use switching::{Switching, ZoneSwitch, count};
pub use zones::{Before, ZonePlan, Zoned};

/// The layout of one sync: the workload `<name>` (planned even with zones, where it is the
/// workload a switch turning zones on leaves), the zones, and the zone layout switch under way.
pub struct Layout<'a> {
    /// The workload without zones, `<name>`.
    pub plan: Plan<'a>,
    /// With `spec.zones` (of a valid spec): each zone's workload and the zones' budgets.
    pub zones: Option<Zoned<'a>>,
    /// A zone layout switch under way (of a valid spec): the workloads that leave.
    pub switch: Option<Switch<'a>>,
}

impl<'a> Layout<'a> {
    /// The layout of the Memcached `name` with effective spec `e` over the observed `children`;
    /// `statefulsets`: the CompositeController declares them. Only a `valid` spec has zones and
    /// a switch (an invalid one keeps what is observed). `before`: what the zones' budgets read
    /// from the last sync's status, and this sync's time ([`budgets::decide`]).
    #[must_use]
    pub fn of(
        e: &'a Effective<'a>,
        children: &'a Observed,
        (name, statefulsets): (&str, bool),
        valid: bool,
        before: Before<'_>,
    ) -> Self {
        let plan = Plan::new(e, children, name, statefulsets, valid);
        let zones = valid
            .then(|| Zoned::of(e, children, (name, statefulsets), before))
            .flatten();
        let switch = valid
            .then(|| Switch::of(&plan, zones.as_ref(), children, name))
            .flatten();
        Self {
            plan,
            zones,
            switch,
        }
    }

    /// When Metacontroller should sync again although nothing changes: a second after a short
    /// zone would be lost, so that the sync then finds it lost.
    #[must_use]
    pub fn resync_after_seconds(&self) -> Option<f64> {
        let seconds = self.zones.as_ref()?.next_loss_seconds?;
        i32::try_from(seconds.saturating_add(1)).ok().map(f64::from)
    }

    /// Whether a workload (`<name>`, or a zone's) switches between Deployment and StatefulSet:
    /// the old kind is answered too.
    #[must_use]
    pub fn switching_kind(&self) -> bool {
        self.plan.switching_from().is_some() || self.zones.as_ref().is_some_and(Zoned::switching)
    }

    /// Whether this sync creates the cache: no workload of the layout is observed (nor one
    /// leaving) and the parent has no `conditions` yet. Its status then reads as it will once
    /// the workloads are observed without a status, so the next sync writes no second status.
    #[must_use]
    pub fn creating(&self, conditions_empty: bool) -> bool {
        conditions_empty
            && self.switch.is_none()
            && self.plan.current.is_none()
            && self.plan.switching_from().is_none()
            && !self.zones.as_ref().is_some_and(Zoned::observed_any)
    }

    /// Who the server lists name: the workload's pods or its Service, every zone's pods, or
    /// what a switch keeps naming while the leaving workloads serve.
    #[must_use]
    pub fn members(&self) -> Members<'a> {
        let new = match &self.zones {
            Some(z) => z.members(),
            None => members(&self.plan, self.plan.switching_from()),
        };
        self.switch.as_ref().map_or(new, |s| s.members(new))
    }

    /// The switch under way, for the status: between Deployment and StatefulSet (of `<name>`,
    /// or in any zone), or of the zone layout.
    #[must_use]
    pub fn switch_state(&self) -> Option<Switching<'a>> {
        let kind_switch = match &self.zones {
            Some(z) => z.switch_state(),
            None => self.plan.switching_from().map(|old| Switching {
                from: old.kind.as_str(),
                ready: count(old.status.ready_replicas),
                zones: None,
            }),
        };
        match &self.switch {
            Some(s) => Some(s.state(kind_switch)),
            None => kind_switch,
        }
    }

    /// The observed status of the layout's workload, the zones' counted together (`outdated`:
    /// the zones whose workload does not carry the desired template, [`Zoned::observed`]);
    /// `None` when none is observed.
    #[must_use]
    pub fn observed(&self, outdated: Option<&[bool]>) -> Option<ChildStatus> {
        match &self.zones {
            Some(z) => z.observed(outdated),
            None => self.plan.current.map(|c| c.status.clone()),
        }
    }
}
