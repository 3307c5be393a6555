//! The headless Service in front of the memcached pods.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::labels;
use super::ports::Port;
use crate::api::effective::Effective;

fn port(port: &Port) -> ServicePort {
    ServicePort {
        name: Some(port.name.to_owned()),
        port: port.number,
        target_port: Some(IntOrString::String(port.name.to_owned())),
        protocol: Some("TCP".to_owned()),
        ..ServicePort::default()
    }
}

/// The desired headless Service named `name`: `clusterIP: None` from the first create on
/// (it is immutable), the base labels as selector, every `served` port, annotations replaced
/// wholesale; `publishNotReadyAddresses` only when asked for (absent is Kubernetes' `false`).
#[must_use]
pub fn build(name: &str, e: &Effective<'_>, served: &[Port]) -> Service {
    Service {
        metadata: ObjectMeta {
            labels: Some(match e.service.labels {
                // The hook's labels win a clash (validation refuses one before it gets here).
                Some(user) => {
                    let mut merged = user.clone();
                    merged.extend(labels::base(name));
                    merged
                }
                None => labels::base(name),
            }),
            annotations: e.service.annotations.cloned(),
            ..labels::metadata(name)
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            selector: Some(labels::base(name)),
            ports: Some(served.iter().map(port).collect()),
            publish_not_ready_addresses: e.service.publish_not_ready_addresses.then_some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
