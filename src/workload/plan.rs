//! Which workload runs the pods, and the switch between a Deployment and a StatefulSet.
//!
//! Metacontroller deletes every observed child a sync answer leaves out, so a switch answers
//! both workloads: the new one at full size, the old one kept exactly as observed, until the new
//! one reports every replica ready for its latest spec. Then the old one is left out and
//! Metacontroller deletes it. Everything is derived from the spec and the observed children,
//! never from the parent's status (which may be stale).

use crate::api::Workload;
use crate::api::effective::Effective;
use crate::children::running_layouts::Layouts;
use crate::children::{ChildKind, warm_restart};
use crate::hook::{Observed, ObservedChild};

/// The workload this sync builds and what happens to the other one.
#[derive(Debug)]
pub struct Plan<'a> {
    /// The kind built from the spec: the StatefulSet only when the spec asks for it and the
    /// CompositeController declares `statefulsets`.
    pub kind: ChildKind,
    /// The observed workload of that kind.
    pub current: Option<&'a ObservedChild>,
    /// The observed workload of the other kind, kept until `current` is settled.
    pub old: Option<&'a ObservedChild>,
    /// `spec.replicas` answered for `kind`: the spec's count; under autoscaling the observed
    /// count of `current`, else of `old` (the switch hands the HPA's choice over), else none.
    pub replicas: Option<i32>,
    /// The spec asks for a StatefulSet whose volume claim templates differ from the observed
    /// one's, which cannot change in place: a Deployment takes over until the StatefulSet is
    /// gone, then the switch back creates it anew.
    pub bridge: bool,
    /// For a valid spec whose StatefulSet keeps the cache (`kind` StatefulSet, `warmRestart`):
    /// the spec's memory layout and those its pods may hold.
    pub layouts: Option<Layouts>,
}

impl<'a> Plan<'a> {
    /// The plan for the Memcached `name` with effective spec `e`; only a `valid` spec starts
    /// the replacement of a StatefulSet ([`Plan::bridge`]) and has [`Plan::layouts`].
    #[must_use]
    pub fn new(
        e: &Effective<'_>,
        children: &'a Observed,
        name: &str,
        statefulsets_declared: bool,
        valid: bool,
    ) -> Self {
        let find = |k: ChildKind| children.find(k.api_version(), k.kind(), name);
        let wanted = e.workload == Workload::StatefulSet && statefulsets_declared;
        let bridge = valid
            && wanted
            && find(ChildKind::StatefulSet).is_some_and(|s| !warm_restart::claims_match(s, e));
        let kind = if wanted && !bridge {
            ChildKind::StatefulSet
        } else {
            ChildKind::Deployment
        };
        let current = find(kind);
        let old = find(other(kind));
        let replicas = if e.autoscaling.is_some() {
            current
                .and_then(|c| c.spec.replicas)
                .or_else(|| old.and_then(|o| o.spec.replicas))
        } else {
            e.replicas
        };
        let layouts = (valid && kind == ChildKind::StatefulSet && e.warm_restart.is_some())
            .then(|| Layouts::of(e, current));
        Self {
            kind,
            current,
            old,
            replicas,
            bridge,
            layouts,
        }
    }

    /// The old workload while the switch is under way (`None` once the new one is settled, or
    /// when there is nothing to switch from).
    #[must_use]
    pub fn switching_from(&self) -> Option<&'a ObservedChild> {
        let old = self.old?;
        let done = self
            .current
            .is_some_and(|c| c.settled(self.replicas.unwrap_or(1)));
        (!done).then_some(old)
    }
}

/// The other workload kind.
#[must_use]
pub fn other(kind: ChildKind) -> ChildKind {
    if kind == ChildKind::StatefulSet {
        ChildKind::Deployment
    } else {
        ChildKind::StatefulSet
    }
}
