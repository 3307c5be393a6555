//! The memcached Deployment: pods, containers, probes, volumes and the pod annotations that
//! roll them (docs/behaviour.md).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, ExecAction, KeyToPath, Lifecycle, LifecycleHandler,
    PodAffinityTerm, PodAntiAffinity, PodSpec, PodTemplateSpec, Probe, ResourceRequirements,
    SecretVolumeSource, TCPSocketAction, Volume, VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::ports::{self, Port, Server};
use super::{SASL_MOUNT_PATH, TLS_MOUNT_PATH, args, labels};
use crate::api::effective::Effective;
use crate::api::monitoring::Monitoring;
use crate::api::{AntiAffinityPreset, quantity};

const SASL_VOLUME: &str = "sasl-credentials";
const TLS_VOLUME: &str = "tls-certificates";
const HOSTNAME_TOPOLOGY_KEY: &str = "kubernetes.io/hostname";

/// Pod-template annotation that rolls the pods when a referenced Secret changes.
pub const SECRET_HASH: &str = "memcached.c5c3.io/secret-hash";
/// Pod-template annotation copied from the parent's annotation of the same name: changing it
/// restarts the pods.
pub const RESTART_TRIGGER: &str = "memcached.c5c3.io/restart-trigger";

/// What rolls the pods besides the spec: the pod-template annotations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollers<'a> {
    /// Hash of the referenced Secrets' data, when any was found.
    pub secret_hash: Option<&'a str>,
    /// The parent's restart trigger; an empty one is not written.
    pub restart_trigger: Option<&'a str>,
}

impl Rollers<'_> {
    /// The pod-template annotations, absent when there is none.
    fn annotations(self) -> Option<BTreeMap<String, String>> {
        let pairs = [
            (SECRET_HASH, self.secret_hash),
            (
                RESTART_TRIGGER,
                self.restart_trigger.filter(|t| !t.is_empty()),
            ),
        ];
        let map: BTreeMap<String, String> = pairs
            .into_iter()
            .filter_map(|(key, value)| Some((key.to_owned(), value?.to_owned())))
            .collect();
        (!map.is_empty()).then_some(map)
    }
}

/// Desired `spec.replicas`: the spec's count, or with autoscaling the observed Deployment's
/// count (so the hand-over to the HPA never dips to 1), absent on the first create.
#[must_use]
pub fn replicas(e: &Effective<'_>, observed: Option<i32>) -> Option<i32> {
    if e.autoscaling.is_some() {
        observed
    } else {
        e.replicas
    }
}

/// The ports of `served` that `listener` listens on.
fn container_ports(served: &[Port], listener: Server) -> Vec<ContainerPort> {
    served
        .iter()
        .filter(|p| p.server == listener)
        .map(|p| ContainerPort {
            name: Some(p.name.to_owned()),
            container_port: p.number,
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        })
        .collect()
}

fn tcp_probe(initial_delay_seconds: i32, period_seconds: i32) -> Probe {
    Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::String(ports::MEMCACHED.name.to_owned()),
            host: None,
        }),
        initial_delay_seconds: Some(initial_delay_seconds),
        period_seconds: Some(period_seconds),
        ..Probe::default()
    }
}

/// Resources with canonical quantities, absent when empty.
fn resources(requirements: Option<&ResourceRequirements>) -> Option<ResourceRequirements> {
    let r = requirements?;
    let canonical = |list: &Option<BTreeMap<String, Quantity>>| {
        list.as_ref().filter(|l| !l.is_empty()).map(|l| {
            l.iter()
                .map(|(k, q)| (k.clone(), quantity::canonical(q)))
                .collect()
        })
    };
    let out = ResourceRequirements {
        limits: canonical(&r.limits),
        requests: canonical(&r.requests),
        claims: r.claims.clone().filter(|c| !c.is_empty()),
    };
    (out != ResourceRequirements::default()).then_some(out)
}

fn affinity(name: &str, preset: Option<AntiAffinityPreset>) -> Option<Affinity> {
    let term = || PodAffinityTerm {
        topology_key: HOSTNAME_TOPOLOGY_KEY.to_owned(),
        label_selector: Some(LabelSelector {
            match_labels: Some(labels::anti_affinity(name)),
            match_expressions: None,
        }),
        ..PodAffinityTerm::default()
    };
    let anti = match preset? {
        AntiAffinityPreset::Soft => PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: term(),
                },
            ]),
            required_during_scheduling_ignored_during_execution: None,
        },
        AntiAffinityPreset::Hard => PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: None,
            required_during_scheduling_ignored_during_execution: Some(vec![term()]),
        },
    };
    Some(Affinity {
        pod_anti_affinity: Some(anti),
        ..Affinity::default()
    })
}

fn secret_volume(volume: &str, secret: &str, keys: &[&str]) -> Volume {
    Volume {
        name: volume.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            items: Some(
                keys.iter()
                    .map(|k| KeyToPath {
                        key: (*k).to_owned(),
                        path: (*k).to_owned(),
                        mode: None,
                    })
                    .collect(),
            ),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

fn mount(volume: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: volume.to_owned(),
        mount_path: path.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    }
}

fn volumes_and_mounts(e: &Effective<'_>) -> (Vec<Volume>, Vec<VolumeMount>) {
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    if let Some(secret) = e.security.sasl_secret {
        volumes.push(secret_volume(SASL_VOLUME, secret, &["password-file"]));
        mounts.push(mount(SASL_VOLUME, SASL_MOUNT_PATH));
    }
    if let Some(tls) = e.security.tls {
        let keys: &[&str] = if tls.client_cert {
            &["tls.crt", "tls.key", "ca.crt"]
        } else {
            &["tls.crt", "tls.key"]
        };
        volumes.push(secret_volume(TLS_VOLUME, tls.secret_name, keys));
        mounts.push(mount(TLS_VOLUME, TLS_MOUNT_PATH));
    }
    (volumes, mounts)
}

fn memcached_container(e: &Effective<'_>, served: &[Port], mounts: Vec<VolumeMount>) -> Container {
    Container {
        name: "memcached".to_owned(),
        image: Some(e.image.to_owned()),
        args: Some(args::memcached(e)),
        ports: Some(container_ports(served, Server::Memcached)),
        resources: resources(e.resources),
        liveness_probe: Some(tcp_probe(10, 10)),
        readiness_probe: Some(tcp_probe(5, 5)),
        lifecycle: e.high_availability.graceful_shutdown.map(|g| Lifecycle {
            pre_stop: Some(LifecycleHandler {
                exec: Some(ExecAction {
                    command: Some(vec![
                        "sleep".to_owned(),
                        g.pre_stop_delay_seconds.to_string(),
                    ]),
                }),
                ..LifecycleHandler::default()
            }),
            ..Lifecycle::default()
        }),
        security_context: e.security.container_security_context.cloned(),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        ..Container::default()
    }
}

fn exporter_container(e: &Effective<'_>, m: &Monitoring<'_>, served: &[Port]) -> Container {
    Container {
        name: "exporter".to_owned(),
        image: Some(m.exporter_image.to_owned()),
        ports: Some(container_ports(served, Server::Exporter)),
        resources: resources(m.exporter_resources),
        security_context: e.security.container_security_context.cloned(),
        ..Container::default()
    }
}

/// The desired Deployment named `name`: its containers listen on the `served` ports, and its
/// pod template carries the annotations of `rollers`.
#[must_use]
pub fn build(
    name: &str,
    e: &Effective<'_>,
    served: &[Port],
    replicas: Option<i32>,
    rollers: Rollers<'_>,
) -> Deployment {
    let pod_labels = labels::with_version(name, e.image);
    let (volumes, mounts) = volumes_and_mounts(e);
    let mut containers = vec![memcached_container(e, served, mounts)];
    if let Some(m) = &e.monitoring {
        containers.push(exporter_container(e, m, served));
    }
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(pod_labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas,
            selector: labels::selector(name),
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
                    annotations: rollers.annotations(),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    affinity: affinity(name, e.high_availability.anti_affinity),
                    topology_spread_constraints: e
                        .high_availability
                        .topology_spread
                        .map(<[_]>::to_vec),
                    termination_grace_period_seconds: e
                        .high_availability
                        .graceful_shutdown
                        .map(|g| g.termination_grace_period_seconds),
                    security_context: e.security.pod_security_context.cloned(),
                    // memcached and the exporter never call the Kubernetes API.
                    automount_service_account_token: Some(false),
                    containers,
                    volumes: (!volumes.is_empty()).then_some(volumes),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}
