//! The NetworkPolicy: ingress to the served ports only.

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::labels;
use super::ports::Port;

fn tcp(port: &Port) -> NetworkPolicyPort {
    NetworkPolicyPort {
        protocol: Some("TCP".to_owned()),
        port: Some(IntOrString::Int(port.number)),
        end_port: None,
    }
}

/// The desired NetworkPolicy named `name`: ingress only, to the `served` ports (memcached, and
/// TLS and metrics when enabled), from `allowedSources` (every source when empty).
#[must_use]
pub fn build(name: &str, served: &[Port], allowed_sources: &[NetworkPolicyPeer]) -> NetworkPolicy {
    NetworkPolicy {
        metadata: labels::metadata(name),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(labels::selector(name)),
            policy_types: Some(vec!["Ingress".to_owned()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                ports: Some(served.iter().map(tcp).collect()),
                from: (!allowed_sources.is_empty()).then(|| allowed_sources.to_vec()),
            }]),
            egress: None,
        }),
    }
}
