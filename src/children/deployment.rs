//! The memcached Deployment (`spec.workload: Deployment`, the default): the shared pod template
//! ([`super::pod`]) under a rolling update that adds a pod before it removes one.

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pod::{Pods, pod_template, workload_metadata};

/// The desired Deployment of `pods`, named after the parent (or `<name>-<zone>` for a zone's),
/// with the hook's labels and selector (the pods' labels and annotations are the template's,
/// [`pod_template`]).
#[must_use]
pub fn build(pods: Pods<'_>, replicas: Option<i32>) -> Deployment {
    Deployment {
        metadata: workload_metadata(pods),
        spec: Some(DeploymentSpec {
            replicas,
            selector: pods.selector(),
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_owned()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(1)),
                    max_unavailable: Some(IntOrString::Int(0)),
                }),
            }),
            template: pod_template(pods),
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}
