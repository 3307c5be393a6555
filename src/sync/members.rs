//! Who the server lists name: `status.serverList` and the server-list ConfigMap.

use crate::api::effective::Effective;
use crate::children::servers::{self, Members};
use crate::children::{ChildKind, ports};
use crate::hook::{Child, ObservedChild};
use crate::status::ServerList;
use crate::workload::Plan;

use super::zones::Zoned;

/// What `status.serverList` publishes: during a switch what the old mode publishes for the old
/// workload; in StatefulSet mode every pod by its stable name once the StatefulSet exists.
pub(super) fn server_list(plan: &Plan<'_>, migrating_from: Option<&ObservedChild>) -> ServerList {
    match (plan.kind, migrating_from) {
        (ChildKind::StatefulSet, Some(_)) => ServerList::ServiceWhileServing,
        (_, Some(old)) => ServerList::Pods(old.spec.replicas.unwrap_or(1)),
        (ChildKind::StatefulSet, None) if plan.current.is_some() => {
            ServerList::Pods(plan.replicas.unwrap_or(1))
        }
        (ChildKind::StatefulSet, None) => ServerList::Nothing,
        (_, None) => ServerList::ServiceWhenReady,
    }
}

/// Who the server-list ConfigMap names: who `status.serverList` names, whether or not they are
/// ready (a list that follows readiness would change with every restart), and in StatefulSet
/// mode the pods the StatefulSet will have before it exists (their names are known).
fn members(plan: &Plan<'_>) -> Members<'static> {
    match server_list(plan, plan.migrating_from()) {
        // One plan's list is never `Zones` (only the zones' together are).
        ServerList::ServiceWhenReady | ServerList::ServiceWhileServing | ServerList::Zones => {
            Members::Service
        }
        ServerList::Pods(n) => Members::Pods(n),
        ServerList::Nothing => Members::Pods(plan.replicas.unwrap_or(1)),
    }
}

/// The server-list ConfigMap of the Memcached `name` in `namespace`.
pub(super) fn server_list_config_map(
    name: &str,
    namespace: &str,
    e: &Effective<'_>,
    plan: &Plan<'_>,
) -> Child {
    config_map(name, namespace, e, members(plan))
}

/// The server-list ConfigMap of the Memcached `name` in `namespace` during a zone layout switch:
/// as `status.serverList` (`list`), the pods of a StatefulSet without zones or the Service.
pub(super) fn switch_config_map(
    name: &str,
    namespace: &str,
    e: &Effective<'_>,
    list: ServerList,
) -> Child {
    let members = match list {
        ServerList::Pods(n) => Members::Pods(n),
        _ => Members::Service,
    };
    config_map(name, namespace, e, members)
}

/// The server-list ConfigMap of the Memcached `name` in `namespace` with zones: as
/// `status.serverList`, the Service, or every zone's pods as the StatefulSets will have them.
pub(super) fn zones_config_map(
    name: &str,
    namespace: &str,
    e: &Effective<'_>,
    z: &Zoned<'_>,
) -> Child {
    let members = match (z.server_list(), e.zones.as_ref()) {
        (ServerList::Zones, Some(zones)) => Members::Zones(&zones.names, z.replicas),
        _ => Members::Service,
    };
    config_map(name, namespace, e, members)
}

/// The server-list ConfigMap naming `members`.
fn config_map(name: &str, namespace: &str, e: &Effective<'_>, members: Members<'_>) -> Child {
    let list = servers::Servers {
        name,
        namespace,
        members,
        port: ports::for_clients(e),
        tls: e.security.tls.is_some(),
    };
    Child::ConfigMap(Box::new(servers::build(&list)))
}
