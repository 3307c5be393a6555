//! The headless Service (spec.md Part 2 §c.1).

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{
    MEMCACHED_PORT, MEMCACHED_PORT_NAME, MEMCACHED_TLS_PORT, MEMCACHED_TLS_PORT_NAME, METRICS_PORT,
    METRICS_PORT_NAME, labels,
};
use crate::api::effective::Effective;

fn port(name: &str, number: i32) -> ServicePort {
    ServicePort {
        name: Some(name.to_owned()),
        port: number,
        target_port: Some(IntOrString::String(name.to_owned())),
        protocol: Some("TCP".to_owned()),
        ..ServicePort::default()
    }
}

/// The desired headless Service named `name`: `clusterIP: None` from the first create on
/// (it is immutable), the base labels as selector, annotations replaced wholesale.
#[must_use]
pub fn build(name: &str, e: &Effective<'_>) -> Service {
    let mut ports = vec![port(MEMCACHED_PORT_NAME, MEMCACHED_PORT)];
    if e.tls.is_some() {
        ports.push(port(MEMCACHED_TLS_PORT_NAME, MEMCACHED_TLS_PORT));
    }
    if e.monitoring.is_some() {
        ports.push(port(METRICS_PORT_NAME, METRICS_PORT));
    }
    Service {
        metadata: ObjectMeta {
            annotations: e.service_annotations.cloned(),
            ..labels::metadata(name)
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            selector: Some(labels::base(name)),
            ports: Some(ports),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
