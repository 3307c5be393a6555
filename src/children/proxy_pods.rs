//! The proxy's pods and Service: memcached started as memcached's proxy with the route
//! configuration `<name>-proxy` mounted, one Deployment per zone pinned to it and told its zone
//! (or one Deployment without zones), and the Service `<name>-proxy` in front of them all
//! (docs/behaviour.md, "Proxy"). Each proxy pod runs the reload agent in proxy mode beside the
//! proxy: a new route configuration is loaded by SIGHUP, so the pod template depends on the
//! proxy's own settings only, and a new membership restarts no proxy. With `spec.monitoring` each
//! proxy pod runs the stats exporter beside the proxy, the Service has the `metrics` port, and a
//! ServiceMonitor `<name>-proxy` of its own scrapes it.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, PodSpec, PodTemplateSpec,
    Service, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::ports::Port;
use super::proxy_config::{ROUTES_KEY, SUFFIX, ZONE_ENV};
use super::service_monitor;
use super::volumes::{TLS_VOLUME, secret_volume};
use super::zone::Zone;
use super::{TLS_MOUNT_PATH, exporter, labels, ports, reload_agent, security_context};
use crate::api::effective::Effective;
use crate::api::monitoring::ServiceMonitor as MonitorSettings;
use crate::api::proxy::Proxy;
use crate::hook::service_monitor::ServiceMonitor;

/// `app.kubernetes.io/name` of the proxy's pods: apart from the cache's pods, so that neither
/// the cache's Service, budget and network policy nor its workloads select them.
pub const APP_NAME: &str = "memcached-proxy";
/// Where the route configuration is mounted.
pub const CONFIG_DIR: &str = "/etc/memcached/proxy";
/// The volume of the route configuration.
const CONFIG_VOLUME: &str = "proxy-routes";
/// The proxy's container.
const CONTAINER: &str = "proxy";

/// The name of a proxy Deployment of the Memcached `name`: `<name>-proxy`, or
/// `<name>-proxy-<zone>` for a zone's.
#[must_use]
pub fn workload_name(name: &str, zone: Option<&str>) -> String {
    match zone {
        Some(zone) => format!("{name}{SUFFIX}-{zone}"),
        None => format!("{name}{SUFFIX}"),
    }
}

/// Whether `child` is the name of one of the Memcached `name`'s proxy Deployments.
#[must_use]
pub fn is_workload_name(name: &str, child: &str) -> bool {
    child
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix(SUFFIX))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
}

/// The labels of the proxy's pods (with zones, the zone's too): also their selector.
fn pod_labels(name: &str, zone: Option<Zone<'_>>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([
        (labels::NAME.to_owned(), APP_NAME.to_owned()),
        (labels::INSTANCE.to_owned(), name.to_owned()),
        (labels::MANAGED_BY.to_owned(), labels::MANAGER.to_owned()),
    ]);
    if let Some(zone) = zone {
        out = zone.labelled(out);
    }
    out
}

/// The NetworkPolicy peer of the proxy's pods of the Memcached `name`: the cache's pods admit
/// them beside the allowed sources.
#[must_use]
pub fn peer(name: &str) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        pod_selector: Some(LabelSelector {
            match_labels: Some(pod_labels(name, None)),
            match_expressions: None,
        }),
        ..NetworkPolicyPeer::default()
    }
}

/// The ports the proxy's pods serve to the cluster: the proxy's, and with `spec.monitoring` the
/// stats exporter's `metrics` (the Service's ports and the NetworkPolicy's).
#[must_use]
pub fn served(e: &Effective<'_>) -> Vec<Port> {
    let metrics = e.monitoring.as_ref().map(|_| ports::METRICS);
    std::iter::once(ports::MEMCACHED).chain(metrics).collect()
}

/// The proxy's command line after the image's entrypoint: the route library with the mounted
/// configuration, no UDP, and with `spec.security.tls` TLS on its port (with client
/// certificates when asked) and plaintext only on the pod's loopback, for the reload agent.
#[must_use]
pub fn args(e: &Effective<'_>) -> Vec<String> {
    let mut args = vec![
        "-p".to_owned(),
        ports::MEMCACHED.number.to_string(),
        "-U".to_owned(),
        "0".to_owned(),
        "-o".to_owned(),
        format!("proxy_config=routelib,proxy_arg={CONFIG_DIR}/{ROUTES_KEY}"),
    ];
    if let Some(tls) = e.security.tls {
        args.extend(super::args::tls_args(tls));
        // With -Z every listener speaks TLS unless prefixed `notls:`.
        args.extend([
            "-l".to_owned(),
            format!(
                "{}:{}",
                super::args::LISTEN_ADDRESS,
                ports::MEMCACHED.number
            ),
            "-l".to_owned(),
            format!("notls:127.0.0.1:{}", ports::LOOPBACK_PLAINTEXT),
        ]);
    }
    args
}

/// The proxy's plaintext port on the pod's loopback: its client port, or with TLS (which the
/// proxy serves on its client port whatever `allowPlaintext` says) a loopback listener of its
/// own.
fn admin_port(e: &Effective<'_>) -> i32 {
    if e.security.tls.is_some() {
        ports::LOOPBACK_PLAINTEXT
    } else {
        ports::MEMCACHED.number
    }
}

/// The mount of the route configuration, read-only (the proxy's and the reload agent's).
fn config_mount() -> VolumeMount {
    VolumeMount {
        name: CONFIG_VOLUME.to_owned(),
        mount_path: CONFIG_DIR.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    }
}

/// The volumes of the proxy's pods and the container's mounts: the route configuration, and
/// the TLS Secret with TLS.
fn volumes(name: &str, e: &Effective<'_>) -> (Vec<Volume>, Vec<VolumeMount>) {
    let mut volumes = vec![Volume {
        name: CONFIG_VOLUME.to_owned(),
        config_map: Some(ConfigMapVolumeSource {
            name: format!("{name}{SUFFIX}"),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    }];
    let mut mounts = vec![config_mount()];
    if let Some(tls) = e.security.tls {
        let keys: &[&str] = if tls.client_cert {
            &["tls.crt", "tls.key", "ca.crt"]
        } else {
            &["tls.crt", "tls.key"]
        };
        volumes.push(secret_volume(TLS_VOLUME, tls.secret_name, keys));
        mounts.push(VolumeMount {
            name: TLS_VOLUME.to_owned(),
            mount_path: TLS_MOUNT_PATH.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
    (volumes, mounts)
}

/// The proxy's container: memcached as the proxy, told its `zone`, with `mounts`.
fn container(
    e: &Effective<'_>,
    proxy: Proxy<'_>,
    zone: Option<Zone<'_>>,
    mounts: Vec<VolumeMount>,
) -> Container {
    Container {
        name: CONTAINER.to_owned(),
        image: Some(e.image.to_owned()),
        args: Some(args(e)),
        env: zone.map(|z| {
            vec![EnvVar {
                name: ZONE_ENV.to_owned(),
                value: Some(z.name.to_owned()),
                value_from: None,
            }]
        }),
        ports: Some(vec![ContainerPort {
            name: Some(ports::MEMCACHED.name.to_owned()),
            container_port: ports::MEMCACHED.number,
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }]),
        resources: proxy.resources.cloned(),
        liveness_probe: Some(super::pod::tcp_probe(10, 10)),
        readiness_probe: Some(super::pod::tcp_probe(2, 5)),
        security_context: Some(security_context::container(e)),
        volume_mounts: Some(mounts),
        ..Container::default()
    }
}

/// The proxy's pod spec: the cache's placement and security contexts, pinned to `zone`, with the
/// reload agent of the hook's `agent_image` beside the proxy, and with `spec.monitoring` the
/// stats exporter of the same image reading the proxy's plaintext port.
fn pod_spec(
    name: &str,
    e: &Effective<'_>,
    (proxy, agent_image): (Proxy<'_>, &str),
    zone: Option<Zone<'_>>,
) -> PodSpec {
    let (volumes, mounts) = volumes(name, e);
    let agent = reload_agent::proxy_container(
        e,
        agent_image,
        (&format!("{CONFIG_DIR}/{ROUTES_KEY}"), admin_port(e)),
        config_mount(),
    );
    let mut containers = vec![container(e, proxy, zone, mounts)];
    if let Some(m) = &e.monitoring {
        containers.push(exporter::proxy_container(e, m, agent_image, admin_port(e)));
    }
    PodSpec {
        affinity: zone.map(|z| Affinity {
            node_affinity: Some(z.pin(None)),
            ..Affinity::default()
        }),
        node_selector: e.pod.node_selector.cloned(),
        tolerations: e.pod.tolerations.map(<[_]>::to_vec),
        priority_class_name: e.pod.priority_class_name.map(str::to_owned),
        image_pull_secrets: e.pod.image_pull_secrets.map(<[_]>::to_vec),
        security_context: Some(security_context::pod(e, false)),
        automount_service_account_token: Some(false),
        // The agent sends SIGHUP to the proxy for new routes.
        share_process_namespace: Some(true),
        init_containers: Some(vec![agent]),
        containers,
        volumes: Some(volumes),
        ..PodSpec::default()
    }
}

/// The proxy Deployment of the Memcached `name` (of `zone`, pinned to it and told its name),
/// with the reload agent of the hook's `agent_image`. A change of the proxy's own settings
/// rolls its pods, one new pod before an old one goes; new routes do not.
#[must_use]
pub fn deployment(
    name: &str,
    e: &Effective<'_>,
    proxy: Proxy<'_>,
    zone: Option<Zone<'_>>,
    agent_image: &str,
) -> Deployment {
    let pod_labels = pod_labels(name, zone);
    Deployment {
        metadata: ObjectMeta {
            name: Some(workload_name(name, zone.map(|z| z.name))),
            labels: Some(pod_labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(proxy.replicas),
            selector: LabelSelector {
                match_labels: Some(pod_labels.clone()),
                match_expressions: None,
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_owned()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(1)),
                    max_unavailable: Some(IntOrString::Int(0)),
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod_spec(name, e, (proxy, agent_image), zone)),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// The Service `<name>-proxy` in front of every proxy pod, with the `served` ports: with zones,
/// a client is sent to a proxy of its own zone when there is one (`trafficDistribution:
/// PreferClose`).
#[must_use]
pub fn service(name: &str, served: &[Port], zoned: bool) -> Service {
    let selector = pod_labels(name, None);
    Service {
        metadata: ObjectMeta {
            name: Some(format!("{name}{SUFFIX}")),
            labels: Some(selector.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(selector),
            ports: Some(
                served
                    .iter()
                    .map(|p| ServicePort {
                        name: Some(p.name.to_owned()),
                        port: p.number,
                        target_port: Some(IntOrString::String(p.name.to_owned())),
                        protocol: Some("TCP".to_owned()),
                        ..ServicePort::default()
                    })
                    .collect(),
            ),
            traffic_distribution: zoned.then(|| "PreferClose".to_owned()),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// The ServiceMonitor `<name>-proxy` in `namespace`, scraping the `metrics` port of the proxy's
/// Service: one of its own, so that the proxy's series carry `job="<name>-proxy"` apart from
/// the cache's `job="<name>"`.
#[must_use]
pub fn service_monitor(
    name: &str,
    namespace: &str,
    settings: &MonitorSettings<'_>,
) -> ServiceMonitor {
    service_monitor::selecting(
        &format!("{name}{SUFFIX}"),
        namespace,
        pod_labels(name, None),
        settings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_workload_names_are_told_apart_from_the_cache_and_its_zones() {
        assert!(is_workload_name("cache", "cache-proxy"));
        assert!(is_workload_name("cache", "cache-proxy-zone-a"));
        assert!(!is_workload_name("cache", "cache"));
        assert!(!is_workload_name("cache", "cache-zone-a"));
        assert!(!is_workload_name("cache", "cache-proxyish"));
        assert_eq!(workload_name("cache", Some("zone-a")), "cache-proxy-zone-a");
    }
}
