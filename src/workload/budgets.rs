//! Which zone's disruption budget is open: the failure-domain rule of Rook's managed
//! disruption budgets, applied to the zones of `spec.zones` (docs/behaviour.md, "Zones").
//!
//! While every zone is whole, every zone's budget is the one the user asked for. As soon as one
//! zone is short of ready pods, or its budget has let a pod go, that zone keeps its budget and
//! every other zone's budget is `maxUnavailable: 0`, so a node drain can take pods from one zone
//! only. Two or more short zones are an outage: every budget blocks.
//!
//! While the zones are starting (not every zone has had all its pods ready yet, since the
//! zones or their budgets were created), a short zone is no disruption: every budget blocks until
//! every zone is whole, and then every budget opens at once, so a new cache writes its budgets
//! twice (created, opened) and never moves the allowance around while its pods come up.
//!
//! The budgets change only "break before make": no answer opens a closed budget while it closes
//! an open one, because Metacontroller updates the budgets one by one and an eviction could pass
//! between two updates. So the allowance moves to another zone in two syncs (first every budget
//! closes, then the short zone's opens), and a zone seen whole again first closes its budget too
//! before every budget reopens in a later sync. The only state is what the cluster shows: which
//! observed budgets are `maxUnavailable: 0` (a missing budget protects nothing and counts as
//! open), so the rule survives restarts of the hook and needs no memory.
//!
//! A zone short for longer than `spec.zones.outageTimeoutSeconds` is lost (a misspelled zone,
//! a zone without nodes or capacity, a drain that never ends): as Rook's expired maintenance
//! window, it stops blocking the others. Its budget blocks, and the rule above decides the
//! other zones' budgets among themselves, so drains in the healthy zones go on. A lost zone
//! whose budget is still open first closes it, with every other budget, for one sync. Since
//! when a zone is short is the one fact read from the parent's status
//! (`status.zones[].shortSince`, see [`super::zones`]).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::hook::ObservedChild;

/// What a sync observed of one zone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneFacts {
    /// The zone's observed budget lets pods go: it is not `maxUnavailable: 0`, or it is missing.
    pub open: bool,
    /// The zone is disrupted: its workload has fewer ready pods than desired (none when it is
    /// missing), or its observed budget lists pods it let go (`status.disruptedPods`) or counts
    /// fewer healthy pods than it covers (`currentHealthy < expectedPods`).
    pub short: bool,
    /// The zone has been short for longer than the outage timeout: it no longer blocks the
    /// other zones (set by the caller, who knows since when it is short).
    pub lost: bool,
}

impl ZoneFacts {
    /// The facts of a zone of `desired` pods from its observed `workload` and `budget`.
    #[must_use]
    pub fn observe(
        workload: Option<&ObservedChild>,
        desired: i32,
        budget: Option<&ObservedChild>,
    ) -> Self {
        let ready = workload.and_then(|w| w.status.ready_replicas).unwrap_or(0);
        let budget_used = budget.is_some_and(|b| {
            let s = &b.status;
            s.disrupted_pods > 0 || s.current_healthy.unwrap_or(0) < s.expected_pods.unwrap_or(0)
        });
        Self {
            open: budget.is_none_or(|b| !closed(b)),
            short: ready < desired || budget_used,
            lost: false,
        }
    }
}

/// Whether an observed budget is the blocking one this module writes.
fn closed(budget: &ObservedChild) -> bool {
    budget.spec.max_unavailable == Some(IntOrString::Int(0))
}

/// Why the budgets are what they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// Every zone is whole: every budget is the user's.
    AllWhole,
    /// One zone (its index) is short and holds the allowance; the others block.
    Disrupted(usize),
    /// One zone (its index) is short while other zones' budgets are still open: every budget
    /// blocks this sync, and the short zone gets the allowance in the next one.
    HandingOver(usize),
    /// No zone is short, but the budgets still block all zones but some: every budget blocks
    /// this sync, and every budget reopens in the next one.
    Settling,
    /// Two or more zones (their indices) are short: every budget blocks.
    Outage(Vec<usize>),
    /// The zones are starting and these (their indices) are short: every budget blocks until
    /// every zone is whole.
    Starting(Vec<usize>),
    /// These lost zones (their indices) still have an open budget: every budget blocks this
    /// sync, and the other zones' budgets follow the rule among themselves in the next one.
    Losing(Vec<usize>),
}

/// Each zone's budget: `open[i]` is the user's budget for zone `i`, else `maxUnavailable: 0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budgets {
    /// Whether zone `i`'s budget is the user's (open) or blocks.
    pub open: Vec<bool>,
    /// Why (over the zones that are not lost).
    pub why: Why,
    /// The lost zones (their indices): short for longer than the outage timeout, their budgets
    /// block, and they block no other zone.
    pub lost: Vec<usize>,
}

/// The budgets of the zones observed as `zones` (in spec order); `starting`: not every zone has
/// been whole once yet (among the zones that are not lost).
#[must_use]
pub fn decide(zones: &[ZoneFacts], starting: bool) -> Budgets {
    let lost: Vec<usize> = (0..zones.len())
        .filter(|&i| zones[i].lost && zones[i].short)
        .collect();
    if lost.is_empty() {
        return Budgets {
            lost,
            ..among(zones, starting)
        };
    }
    let none = vec![false; zones.len()];
    if lost.iter().any(|&i| zones[i].open) {
        return Budgets {
            open: none,
            why: Why::Losing(lost.clone()),
            lost,
        };
    }
    let counted: Vec<usize> = (0..zones.len()).filter(|i| !lost.contains(i)).collect();
    if counted.is_empty() {
        return Budgets {
            open: none,
            why: Why::Outage(lost.clone()),
            lost,
        };
    }
    let facts: Vec<ZoneFacts> = counted.iter().map(|&i| zones[i]).collect();
    let inner = among(&facts, starting);
    let mut open = none;
    for (&i, &o) in counted.iter().zip(&inner.open) {
        open[i] = o;
    }
    let back = |v: Vec<usize>| v.into_iter().map(|k| counted[k]).collect();
    let why = match inner.why {
        Why::Disrupted(k) => Why::Disrupted(counted[k]),
        Why::HandingOver(k) => Why::HandingOver(counted[k]),
        Why::Outage(v) => Why::Outage(back(v)),
        Why::Starting(v) => Why::Starting(back(v)),
        Why::Losing(v) => Why::Losing(back(v)),
        w @ (Why::AllWhole | Why::Settling) => w,
    };
    Budgets { open, why, lost }
}

/// The rule over zones none of which is lost.
fn among(zones: &[ZoneFacts], starting: bool) -> Budgets {
    let short: Vec<usize> = (0..zones.len()).filter(|&i| zones[i].short).collect();
    let opened = zones.iter().filter(|z| z.open).count();
    let only = |zone: usize| (0..zones.len()).map(|i| i == zone).collect();
    let none = vec![false; zones.len()];
    match short.as_slice() {
        [] if opened == zones.len() || opened == 0 => Budgets {
            open: vec![true; zones.len()],
            why: Why::AllWhole,
            lost: Vec::new(),
        },
        [] => Budgets {
            open: none,
            why: Why::Settling,
            lost: Vec::new(),
        },
        _ if starting => Budgets {
            open: none,
            why: Why::Starting(short),
            lost: Vec::new(),
        },
        &[zone] if zones[zone].open || opened == 0 => Budgets {
            open: only(zone),
            why: Why::Disrupted(zone),
            lost: Vec::new(),
        },
        &[zone] => Budgets {
            open: none,
            why: Why::HandingOver(zone),
            lost: Vec::new(),
        },
        _ => Budgets {
            open: none,
            why: Why::Outage(short),
            lost: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests;
