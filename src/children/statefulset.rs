//! The memcached StatefulSet (`spec.workload: StatefulSet`): the shared pod template under
//! stable pod names, `<name>-<i>.<name>.<namespace>.svc`, for clients that hash keys over a
//! server list.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetUpdateStrategy};

use super::pod::{Pods, pod_template, workload_metadata};
use super::running_layouts::{self, Layouts};
use super::warm_restart;

/// The desired StatefulSet of `pods`, governed by the headless Service of the parent's name (a
/// zone's StatefulSet, `<name>-<zone>`, too: its pods are `<name>-<zone>-<i>.<name>...`).
///
/// `podManagementPolicy: Parallel`: a cache has no start-up order, so pods start and stop
/// together (it only affects scaling; a rolling update still replaces one pod at a time).
/// `updateStrategy` is `RollingUpdate` without `rollingUpdate`, which the API server stores as
/// sent. `volumeClaimTemplates` only with `warmRestart` ([`warm_restart::apply`]): otherwise
/// memcached keeps nothing on disk. With `layouts` (warm restart), the StatefulSet records the
/// layouts its pods may hold ([`running_layouts::ANNOTATION`]).
#[must_use]
pub fn build(pods: Pods<'_>, replicas: Option<i32>, layouts: Option<&Layouts>) -> StatefulSet {
    let mut spec = StatefulSetSpec {
        replicas,
        selector: pods.selector(),
        service_name: Some(pods.name.to_owned()),
        pod_management_policy: Some("Parallel".to_owned()),
        update_strategy: Some(StatefulSetUpdateStrategy {
            type_: Some("RollingUpdate".to_owned()),
            rolling_update: None,
        }),
        template: pod_template(pods),
        ..StatefulSetSpec::default()
    };
    if let Some(w) = &pods.e.warm_restart {
        warm_restart::apply(&mut spec, pods.e, w, pods.reload_agent_image);
    }
    let mut metadata = workload_metadata(pods);
    if let Some(l) = layouts {
        let annotations = metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(running_layouts::ANNOTATION.to_owned(), l.annotation());
    }
    StatefulSet {
        metadata,
        spec: Some(spec),
        status: None,
    }
}
