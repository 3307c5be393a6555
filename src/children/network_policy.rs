//! The NetworkPolicy (spec.md Part 2 §c.3).

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{MEMCACHED_PORT, MEMCACHED_TLS_PORT, METRICS_PORT, labels};
use crate::api::effective::Effective;

fn tcp(port: i32) -> NetworkPolicyPort {
    NetworkPolicyPort {
        protocol: Some("TCP".to_owned()),
        port: Some(IntOrString::Int(port)),
        end_port: None,
    }
}

/// The desired NetworkPolicy named `name`: ingress only, to the memcached (and TLS and metrics)
/// ports, from `allowedSources` (every source when empty).
#[must_use]
pub fn build(
    name: &str,
    e: &Effective<'_>,
    allowed_sources: &[NetworkPolicyPeer],
) -> NetworkPolicy {
    let mut ports = vec![tcp(MEMCACHED_PORT)];
    if e.tls.is_some() {
        ports.push(tcp(MEMCACHED_TLS_PORT));
    }
    if e.monitoring.is_some() {
        ports.push(tcp(METRICS_PORT));
    }
    NetworkPolicy {
        metadata: labels::metadata(name),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(labels::selector(name)),
            policy_types: Some(vec!["Ingress".to_owned()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                ports: Some(ports),
                from: (!allowed_sources.is_empty()).then(|| allowed_sources.to_vec()),
            }]),
            egress: None,
        }),
    }
}
