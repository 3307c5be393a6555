//! The memcached StatefulSet (`spec.workload: StatefulSet`): the Deployment's pod template under
//! stable pod names, `<name>-<i>.<name>.<namespace>.svc`, for clients that hash keys over a
//! server list.

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetUpdateStrategy};

use super::deployment::{Rollers, pod_template, workload_metadata};
use super::labels;
use super::ports::Port;
use crate::api::effective::Effective;

/// The desired StatefulSet named `name`, governed by the headless Service of the same name.
///
/// `podManagementPolicy: Parallel`: a cache has no start-up order, so pods start and stop
/// together (it only affects scaling; a rolling update still replaces one pod at a time).
/// `updateStrategy` is `RollingUpdate` without `rollingUpdate`, which the API server stores as
/// sent. No `volumeClaimTemplates`: memcached keeps nothing on disk.
#[must_use]
pub fn build(
    name: &str,
    e: &Effective<'_>,
    served: &[Port],
    replicas: Option<i32>,
    rollers: Rollers<'_>,
    reload_agent_image: &str,
) -> StatefulSet {
    StatefulSet {
        metadata: workload_metadata(name, e),
        spec: Some(StatefulSetSpec {
            replicas,
            selector: labels::selector(name),
            service_name: Some(name.to_owned()),
            pod_management_policy: Some("Parallel".to_owned()),
            update_strategy: Some(StatefulSetUpdateStrategy {
                type_: Some("RollingUpdate".to_owned()),
                rolling_update: None,
            }),
            template: pod_template(name, e, served, rollers, reload_agent_image),
            ..StatefulSetSpec::default()
        }),
        status: None,
    }
}

/// The stable address of every pod in ordinal order: `<name>-<i>.<name>.<namespace>.svc:<port>`
/// for `i` in `0..replicas`.
#[must_use]
pub fn server_list(name: &str, namespace: &str, replicas: i32, port: i32) -> Vec<String> {
    (0..replicas)
        .map(|i| format!("{name}-{i}.{name}.{namespace}.svc:{port}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_list_is_in_ordinal_order() {
        assert_eq!(
            server_list("cache", "shop", 3, 11211),
            [
                "cache-0.cache.shop.svc:11211",
                "cache-1.cache.shop.svc:11211",
                "cache-2.cache.shop.svc:11211"
            ]
        );
        assert!(server_list("cache", "shop", 0, 11211).is_empty());
    }
}
