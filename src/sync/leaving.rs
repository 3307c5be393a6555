//! The leaving workloads of a zone layout switch ([`Switch`]) and their budgets, answered as
//! observed so that Metacontroller keeps them until the switch ends.

use crate::children::ChildKind;
use crate::hook::{Child, Received};
use crate::keep::{self, Asked};
use crate::workload::Switch;

use super::SyncError;

impl Switch<'_> {
    /// The leaving workloads and their budgets, each kept exactly as observed.
    pub(super) fn kept(&self, received: &Received<'_>) -> Result<Vec<Child>, SyncError> {
        self.leaving
            .iter()
            .chain(&self.budgets)
            .map(|old| {
                keep::observed(received, Asked::LeavingWorkload(old))
                    .and_then(|mut kept| kept.pop())
                    .ok_or_else(|| SyncError::CannotKeepWorkload {
                        kind: static_kind(&old.kind),
                        name: old.metadata.name.clone(),
                    })
            })
            .collect()
    }
}

/// The kind of a kept child, for the error that it cannot be kept.
fn static_kind(kind: &str) -> &'static str {
    [
        ChildKind::Deployment,
        ChildKind::StatefulSet,
        ChildKind::PodDisruptionBudget,
    ]
    .into_iter()
    .map(ChildKind::kind)
    .find(|k| *k == kind)
    .unwrap_or("workload")
}
