//! Who the server lists name, decided from the workload plan: `status.serverList` and the
//! server-list ConfigMap read the one membership decided here.

use crate::children::ChildKind;
use crate::children::servers::{Members, Shown};
use crate::hook::ObservedChild;

use super::plan::Plan;

/// Who the lists name for the workload `plan`, `switching_from` the old workload of a switch
/// between a Deployment and a StatefulSet: during the switch what the old mode names for the
/// old workload; in StatefulSet mode every pod by its stable name (before the StatefulSet
/// exists, the pods it will have). The ConfigMap names them whether or not they are ready (a
/// list that follows readiness would change with every restart).
#[must_use]
pub fn members(plan: &Plan<'_>, switching_from: Option<&ObservedChild>) -> Members<'static> {
    match (plan.kind, switching_from) {
        (ChildKind::StatefulSet, Some(_)) => Members::Service(Shown::WhileServing),
        (_, Some(old)) => Members::Pods(old.spec.replicas.unwrap_or(1)),
        (ChildKind::StatefulSet, None) if plan.current.is_some() => {
            Members::Pods(plan.replicas.unwrap_or(1))
        }
        (ChildKind::StatefulSet, None) => Members::Planned(plan.replicas.unwrap_or(1)),
        (_, None) => Members::Service(Shown::WhenReady),
    }
}
