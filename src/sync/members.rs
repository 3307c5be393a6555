//! Who the server lists name: `status.serverList` and the server-list ConfigMap read the one
//! membership decided here.

use crate::api::effective::Effective;
use crate::children::servers::{self, Members, Shown};
use crate::children::{ChildKind, ports};
use crate::hook::{Child, ObservedChild};
use crate::workload::Plan;

/// Who the lists name: during a switch what the old mode names for the old workload; in
/// StatefulSet mode every pod by its stable name (before the StatefulSet exists, the pods it will
/// have). The ConfigMap names them whether or not they are ready (a list that follows readiness
/// would change with every restart).
pub(super) fn members(plan: &Plan<'_>, migrating_from: Option<&ObservedChild>) -> Members<'static> {
    match (plan.kind, migrating_from) {
        (ChildKind::StatefulSet, Some(_)) => Members::Service(Shown::WhileServing),
        (_, Some(old)) => Members::Pods(old.spec.replicas.unwrap_or(1)),
        (ChildKind::StatefulSet, None) if plan.current.is_some() => {
            Members::Pods(plan.replicas.unwrap_or(1))
        }
        (ChildKind::StatefulSet, None) => Members::Planned(plan.replicas.unwrap_or(1)),
        (_, None) => Members::Service(Shown::WhenReady),
    }
}

/// The server-list ConfigMap of the Memcached `name` in `namespace`, naming `members`.
pub(super) fn config_map(
    name: &str,
    namespace: &str,
    e: &Effective<'_>,
    members: Members<'_>,
) -> Child {
    let list = servers::Servers {
        name,
        namespace,
        members,
        port: ports::for_clients(e),
        tls: e.security.tls.is_some(),
    };
    Child::ConfigMap(Box::new(servers::build(&list)))
}
