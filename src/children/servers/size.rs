//! Whether the server-list ConfigMap a spec asks for can be stored: Metacontroller keeps a copy
//! of the whole ConfigMap in its last-applied annotation, and the API server limits a child's
//! annotations to 256 KiB in total. The list grows with the name, the namespace, the zones and
//! the replicas, so a spec within the CRD's bounds can ask for one that does not fit; it is
//! refused before any child is built, naming the fields that make it large.

use crate::api::Workload;
use crate::api::apiserver::ANNOTATIONS_TOTAL;
use crate::api::effective::Effective;
use crate::api::validation::Violation;
use crate::children::{accept, ports};
use crate::hook::Child;

use super::{Members, Servers, Shown, build};

/// The field a refusal is reported at: the one that asks for the ConfigMap.
pub const FIELD: &str = "spec.discovery.configMap.enabled";

/// The violation of a spec whose server-list ConfigMap, at the most servers the spec asks for,
/// would not fit in the annotations the API server stores; `None` when it fits or is not
/// written. `statefulsets`: the CompositeController declares StatefulSets (without them the
/// list names the Service).
#[must_use]
pub fn violation(
    name: &str,
    namespace: &str,
    e: &Effective<'_>,
    statefulsets: bool,
) -> Option<Violation> {
    if !e.discovery.config_map {
        return None;
    }
    let replicas = e
        .autoscaling
        .as_ref()
        .and_then(|a| a.max_replicas)
        .or(e.replicas)
        .unwrap_or(1);
    let zones = e.zones.as_ref().map(|z| z.names.as_slice());
    let members = match (e.workload == Workload::StatefulSet && statefulsets, zones) {
        (true, Some(zones)) => Members::Zones(zones, replicas),
        (true, None) => Members::Pods(replicas),
        (false, _) => Members::Service(Shown::WhenReady),
    };
    let servers = Servers {
        name,
        namespace,
        members,
        port: ports::for_clients(e),
        tls: e.security.tls.is_some(),
        proxy: e.proxy.is_some(),
    };
    let stored = stored(&servers);
    if stored <= ANNOTATIONS_TOTAL {
        return None;
    }
    let replicas_field = if e.autoscaling.is_some() {
        "spec.autoscaling.maxReplicas"
    } else {
        "spec.replicas"
    };
    let count = match members {
        Members::Zones(zones, n) => format!(
            "{} servers (spec.zones.names: {} zones x {replicas_field}: {n})",
            zones.len() * usize::try_from(n).unwrap_or(0),
            zones.len()
        ),
        _ => format!("{replicas} servers ({replicas_field}: {replicas})"),
    };
    Some(Violation::invalid(
        FIELD,
        true,
        format!(
            "the server-list ConfigMap {name}{suffix} would list {count}, each named after \
             metadata.name ({name_len} characters) and the namespace ({namespace_len}), in \
             every format: {stored} bytes of annotations once Metacontroller stores its \
             last-applied copy, more than the API server's limit of {ANNOTATIONS_TOTAL}; use \
             fewer zones or replicas, a shorter name, or turn the ConfigMap off",
            suffix = super::SUFFIX,
            name_len = name.len(),
            namespace_len = namespace.len(),
        ),
    ))
}

/// The bytes of annotations the API server would store for the ConfigMap of `servers`, measured
/// on the ConfigMap itself as the hook would answer it.
#[must_use]
pub fn stored(servers: &Servers<'_>) -> usize {
    let config_map = build(servers);
    let meta = config_map.metadata.clone();
    accept::stored_annotations(&Child::ConfigMap(Box::new(config_map)), &meta)
}
