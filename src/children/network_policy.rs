//! The NetworkPolicy: ingress to the served ports only.

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::labels;
use super::ports::{Port, Server};

fn tcp(port: &Port) -> NetworkPolicyPort {
    NetworkPolicyPort {
        protocol: Some("TCP".to_owned()),
        port: Some(IntOrString::Int(port.number)),
        end_port: None,
    }
}

/// Who a cache's NetworkPolicy admits: the allowed sources (every source when empty) and, with
/// `spec.proxy`, the proxy's pods, alone on memcached's ports unless `direct` clients are kept.
#[derive(Clone, Copy, Debug)]
pub struct Admitted<'a> {
    /// `allowedSources`.
    pub sources: &'a [NetworkPolicyPeer],
    /// The proxy's pods, and whether the sources still reach memcached's ports beside them.
    pub proxy: Option<(&'a NetworkPolicyPeer, bool)>,
}

/// One ingress rule: to `ports`, from `from` (every source when empty).
fn rule<'a>(
    ports: impl Iterator<Item = &'a Port>,
    from: &[NetworkPolicyPeer],
) -> NetworkPolicyIngressRule {
    NetworkPolicyIngressRule {
        ports: Some(ports.map(tcp).collect()),
        from: (!from.is_empty()).then(|| from.to_vec()),
    }
}

/// The desired NetworkPolicy named `name`: ingress only, to the `served` ports (memcached, and
/// TLS and metrics when enabled), from the `admitted` sources. With the proxy, its pods are
/// admitted to memcached's ports beside the sources, or alone there when direct clients are
/// not kept (the metrics port still admits the sources: the scraper).
#[must_use]
pub fn build(name: &str, served: &[Port], admitted: Admitted<'_>) -> NetworkPolicy {
    let sources = admitted.sources;
    let ingress = match admitted.proxy {
        None => vec![rule(served.iter(), sources)],
        // Every source is admitted already.
        Some((_, true)) if sources.is_empty() => vec![rule(served.iter(), sources)],
        Some((proxy, true)) => {
            let from = [sources, std::slice::from_ref(proxy)].concat();
            vec![rule(served.iter(), &from)]
        }
        Some((proxy, false)) => {
            let metrics = |p: &&Port| p.server != Server::Memcached;
            let mut rules = vec![rule(
                served.iter().filter(|p| !metrics(p)),
                std::slice::from_ref(proxy),
            )];
            if served.iter().any(|p| metrics(&p)) {
                rules.push(rule(served.iter().filter(metrics), sources));
            }
            rules
        }
    };
    NetworkPolicy {
        metadata: labels::metadata(name),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(labels::selector(name)),
            policy_types: Some(vec!["Ingress".to_owned()]),
            ingress: Some(ingress),
            egress: None,
        }),
    }
}

/// The NetworkPolicy `policy_name` of the proxy's pods (selected by `pods`): ingress only, to
/// the proxy's `served` ports (its own, and with monitoring the exporter's), from the allowed
/// `sources` (every source when empty): the cache's policy holds for clients that go through
/// the proxy, and the scraper reaches the proxy's metrics as it reaches the cache's.
#[must_use]
pub fn for_proxy(
    policy_name: String,
    pods: LabelSelector,
    served: &[Port],
    sources: &[NetworkPolicyPeer],
) -> NetworkPolicy {
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(policy_name),
            labels: pods.match_labels.clone(),
            ..ObjectMeta::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(pods),
            policy_types: Some(vec!["Ingress".to_owned()]),
            ingress: Some(vec![rule(served.iter(), sources)]),
            egress: None,
        }),
    }
}
