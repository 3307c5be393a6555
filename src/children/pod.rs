//! The pod template the Deployment and the StatefulSet share: labels, the annotations that roll
//! the pods, containers (memcached, the exporter, the reload agent and the auth-file init step),
//! probes, volumes and scheduling (docs/behaviour.md); and the workloads' own metadata.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ExecAction, Lifecycle, LifecycleHandler, PodSpec, PodTemplateSpec, Probe,
    TCPSocketAction, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::ports::{self, Port, Server, container_ports};
use super::resources::resources;
use super::volumes::{
    AUTH_COPY_VOLUME, SASL_VOLUME, TLS_VOLUME, mount, secret_volume, writable_mount,
};
use super::zone::Zone;
use super::{
    AUTH_COPY_MOUNT_PATH, SASL_MOUNT_PATH, TLS_MOUNT_PATH, affinity, agent_access, args, auth_file,
    exporter, extstore, labels, reload_agent, security_context,
};
use crate::api::effective::Effective;

/// Pod-template annotation that rolls the pods when a referenced Secret changes.
pub const SECRET_HASH: &str = "memcached.c5c3.io/secret-hash";
/// Pod-template annotation copied from the parent's annotation of the same name: changing it
/// restarts the pods.
pub const RESTART_TRIGGER: &str = "memcached.c5c3.io/restart-trigger";

/// What the pods of a workload are built from (the Deployment and the StatefulSet share them).
#[derive(Clone, Copy)]
pub struct Pods<'a> {
    /// The parent's name: the workload's, and the pods' `instance` label.
    pub name: &'a str,
    /// The effective spec.
    pub e: &'a Effective<'a>,
    /// The ports the containers listen on.
    pub served: &'a [Port],
    /// The pod-template annotations that roll the pods.
    pub rollers: Rollers<'a>,
    /// The hook's own image: the reload agent's under `secretRotation: Reload`, and the stats
    /// exporter's and the auth-file init step's under SASL.
    pub reload_agent_image: &'a str,
    /// Whether the reload agent writes each reload's outcome on its own Pod
    /// ([`agent_access`]): the pods then run as its ServiceAccount.
    pub agent_reports: bool,
    /// With `spec.zones`: the zone these pods run in.
    pub zone: Option<Zone<'a>>,
}

impl<'a> Pods<'a> {
    /// The pods of the Memcached `name` with the effective spec `e`, listening on `served`,
    /// rolled by `rollers`; `reload_agent_image` and `agent_reports` as the fields say. No zone.
    #[must_use]
    pub fn new(
        name: &'a str,
        e: &'a Effective<'a>,
        (served, rollers): (&'a [Port], Rollers<'a>),
        reload_agent_image: &'a str,
        agent_reports: bool,
    ) -> Self {
        Self {
            name,
            e,
            served,
            rollers,
            reload_agent_image,
            agent_reports,
            zone: None,
        }
    }

    /// The workload's name: the parent's, or `<name>-<zone>` for a zone's.
    #[must_use]
    pub fn workload_name(&self) -> String {
        self.zone
            .map_or_else(|| self.name.to_owned(), |z| z.child_name(self.name))
    }

    /// The workload's selector: the base labels, and the zone's label for a zone's workload.
    #[must_use]
    pub fn selector(&self) -> LabelSelector {
        self.zone
            .map_or_else(|| labels::selector(self.name), |z| z.selector(self.name))
    }

    /// `labels` with the zone's label for a zone's pods.
    fn zoned(&self, labels: BTreeMap<String, String>) -> BTreeMap<String, String> {
        match self.zone {
            Some(zone) => zone.labelled(labels),
            None => labels,
        }
    }
}

/// What rolls the pods besides the spec: the pod-template annotations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollers<'a> {
    /// Hash of the referenced Secrets' data, when any was found.
    pub secret_hash: Option<&'a str>,
    /// The parent's restart trigger; an empty one is not written.
    pub restart_trigger: Option<&'a str>,
}

impl<'a> Rollers<'a> {
    /// What rolls the pods of `parent`: the Secrets' `secret_hash` and its restart trigger.
    #[must_use]
    pub fn of(parent: &'a crate::hook::Parent, secret_hash: Option<&'a str>) -> Self {
        Self {
            secret_hash,
            restart_trigger: parent.metadata.annotations.restart_trigger.as_deref(),
        }
    }

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

/// A TCP probe of the memcached port.
pub(super) fn tcp_probe(initial_delay_seconds: i32, period_seconds: i32) -> Probe {
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

/// The pod's volumes, memcached's mounts and the reload agent's: memcached reads the copy of
/// the auth file; the agent reads the Secret and writes the copy.
fn volumes_and_mounts(e: &Effective<'_>) -> (Vec<Volume>, Vec<VolumeMount>, Vec<VolumeMount>) {
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    let mut agent_mounts = Vec::new();
    if let Some(secret) = e.security.sasl_secret {
        volumes.push(secret_volume(SASL_VOLUME, secret, &["password-file"]));
        volumes.push(auth_file::volume());
        mounts.push(mount(AUTH_COPY_VOLUME, AUTH_COPY_MOUNT_PATH));
        agent_mounts.push(mount(SASL_VOLUME, SASL_MOUNT_PATH));
        agent_mounts.push(writable_mount(AUTH_COPY_VOLUME, AUTH_COPY_MOUNT_PATH));
    }
    if let Some(tls) = e.security.tls {
        let keys: &[&str] = if tls.client_cert {
            &["tls.crt", "tls.key", "ca.crt"]
        } else {
            &["tls.crt", "tls.key"]
        };
        volumes.push(secret_volume(TLS_VOLUME, tls.secret_name, keys));
        mounts.push(mount(TLS_VOLUME, TLS_MOUNT_PATH));
        agent_mounts.push(mount(TLS_VOLUME, TLS_MOUNT_PATH));
    }
    if let Some(x) = &e.extstore {
        volumes.push(extstore::volume(x));
        mounts.push(extstore::mount());
    }
    (volumes, mounts, agent_mounts)
}

/// The resource of a pod's share of its node's disk.
const EPHEMERAL_STORAGE: &str = "ephemeral-storage";

fn memcached_container(e: &Effective<'_>, served: &[Port], mounts: Vec<VolumeMount>) -> Container {
    Container {
        name: "memcached".to_owned(),
        image: Some(e.image.to_owned()),
        args: Some(args::memcached(e)),
        ports: Some(container_ports(served, Server::Memcached)),
        resources: resources(
            e.resources,
            &[
                ("memory", e.memory_request_mib),
                (
                    EPHEMERAL_STORAGE,
                    e.extstore.as_ref().and_then(extstore::node_disk_mib),
                ),
            ],
        ),
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
        security_context: Some(security_context::container(e)),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        ..Container::default()
    }
}

/// `own` over `user`: the user's entries, then the hook's, which win any clash (validation
/// refuses one before it gets here).
fn merged(
    user: Option<&BTreeMap<String, String>>,
    own: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    match user {
        None => own,
        Some(user) => {
            let mut out = user.clone();
            out.extend(own);
            out
        }
    }
}

/// The metadata of the workload of `pods` (Deployment or StatefulSet): its name and the
/// hook's labels with the version of the image (and the zone's label); the pods' own labels are
/// the template's.
#[must_use]
pub fn workload_metadata(pods: Pods<'_>) -> ObjectMeta {
    ObjectMeta {
        name: Some(pods.workload_name()),
        labels: Some(pods.zoned(labels::with_version(pods.name, pods.e.image))),
        ..ObjectMeta::default()
    }
}

/// The pod template shared by the Deployment and the StatefulSet: labels, the
/// rollers' annotations, containers (and the reload agent), volumes and scheduling.
/// `podLabels` and `podAnnotations` join the hook's pod labels and annotations and never
/// replace one.
#[must_use]
pub fn pod_template(pods: Pods<'_>) -> PodTemplateSpec {
    let Pods {
        name, e, rollers, ..
    } = pods;
    let pod_labels = merged(
        e.pod.labels,
        pods.zoned(labels::with_version(name, e.image)),
    );
    let annotations = match (e.pod.annotations, rollers.annotations()) {
        (None, own) => own,
        (Some(user), own) => Some(merged(Some(user), own.unwrap_or_default())),
    };
    let (mut volumes, mounts, mut agent_mounts) = volumes_and_mounts(e);
    if pods.agent_reports {
        volumes.push(agent_access::volume());
        agent_mounts.push(agent_access::mount());
    }
    let (init_containers, containers) = containers(pods, mounts, &agent_mounts);
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations,
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            affinity: affinity::affinity(
                name,
                e.high_availability.anti_affinity,
                e.pod.affinity,
                pods.zone,
            ),
            node_selector: e.pod.node_selector.cloned(),
            tolerations: e.pod.tolerations.map(<[_]>::to_vec),
            priority_class_name: e.pod.priority_class_name.map(str::to_owned),
            image_pull_secrets: e.pod.image_pull_secrets.map(<[_]>::to_vec),
            topology_spread_constraints: e.high_availability.topology_spread.map(<[_]>::to_vec),
            termination_grace_period_seconds: e
                .high_availability
                .graceful_shutdown
                .map(|g| g.termination_grace_period_seconds),
            // Warm restart adds its claim, and the fsGroup memcached's user writes it with;
            // extstore's volume is written by memcached's user too.
            security_context: Some(security_context::pod(e, e.extstore.is_some())),
            // memcached and the exporter never call the Kubernetes API; a reporting agent
            // mounts its own token.
            automount_service_account_token: Some(false),
            service_account_name: pods.agent_reports.then(|| agent_access::account_name(name)),
            // The agent sends SIGHUP to memcached for a new auth file.
            share_process_namespace: (e.security.reloads() && e.security.sasl_secret.is_some())
                .then_some(true),
            init_containers: (!init_containers.is_empty()).then_some(init_containers),
            containers,
            volumes: (!volumes.is_empty()).then_some(volumes),
            ..PodSpec::default()
        }),
    }
}

/// The init containers (the auth-file step under SASL, the reload agent when it runs) and the
/// containers (memcached with `mounts`, the exporter under monitoring) of `pods`.
fn containers(
    pods: Pods<'_>,
    mounts: Vec<VolumeMount>,
    agent_mounts: &[VolumeMount],
) -> (Vec<Container>, Vec<Container>) {
    let Pods {
        e,
        served,
        reload_agent_image: image,
        agent_reports,
        ..
    } = pods;
    let mut init_containers = Vec::new();
    if e.security.sasl_secret.is_some() {
        init_containers.push(auth_file::container(e, image));
    }
    if e.security.reloads() {
        init_containers.push(reload_agent::container(
            e,
            image,
            agent_mounts,
            agent_reports,
        ));
    }
    let mut containers = vec![memcached_container(e, served, mounts)];
    if let Some(m) = &e.monitoring {
        containers.push(exporter::container(e, m, served, image));
    }
    (init_containers, containers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::pod::{OWN_ANNOTATION_PREFIX, OWN_LABELS};

    #[test]
    fn the_keys_validation_keeps_for_the_hook_are_the_ones_it_writes() {
        for key in [SECRET_HASH, RESTART_TRIGGER] {
            assert!(key.starts_with(OWN_ANNOTATION_PREFIX), "{key}");
        }
        for key in [
            labels::NAME,
            labels::INSTANCE,
            labels::MANAGED_BY,
            labels::VERSION,
        ] {
            assert!(OWN_LABELS.contains(&key), "{key}");
        }
    }
}
