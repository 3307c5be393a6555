//! The metrics sidecar of a memcached pod, serving port `metrics` (9150). Without SASL it is the
//! Prometheus memcached exporter (`spec.monitoring.exporterImage`). With SASL memcached refuses
//! `stats` to a client that has not logged in, and the exporter has no way to log in: the hook's
//! own image then runs `memcached-hook stats-exporter`, which logs in with the mounted auth file
//! and serves the same series names (`src/pod/exporter/stats.rs`). A proxy pod's sidecar is
//! always the stats exporter: it also serves the proxy's own counters (`memcached_proxy_*`).

use k8s_openapi::api::core::v1::Container;

use super::ports::{self, Port, Server, container_ports};
use super::resources::resources;
use super::volumes::{AUTH_COPY_VOLUME, mount};
use super::{AUTH_COPY_FILE, AUTH_COPY_MOUNT_PATH, own_image, security_context};
use crate::api::effective::Effective;
use crate::api::monitoring::Monitoring;

/// The container's name.
pub const NAME: &str = "exporter";

/// The Prometheus exporter's arguments: with TLS locking 11211, it reads memcached's loopback
/// plaintext listener.
fn prometheus_exporter_args(e: &Effective<'_>) -> Option<Vec<String>> {
    ports::tls_only(e).then(|| {
        vec![format!(
            "--memcached.address=127.0.0.1:{}",
            ports::LOOPBACK_PLAINTEXT
        )]
    })
}

/// `memcached-hook stats-exporter` with memcached's own copy of the auth file (so it logs in with
/// what memcached has, also while a rotation is on its way).
fn stats_exporter_args(e: &Effective<'_>) -> Vec<String> {
    vec![
        "stats-exporter".to_owned(),
        "--auth-file".to_owned(),
        AUTH_COPY_FILE.to_owned(),
        "--memcached-addr".to_owned(),
        format!("127.0.0.1:{}", ports::in_pod_plaintext(e)),
    ]
}

/// The metrics sidecar of the pods of `e`; `hook_image` runs the stats exporter under SASL.
#[must_use]
pub fn container(
    e: &Effective<'_>,
    m: &Monitoring<'_>,
    served: &[Port],
    hook_image: &str,
) -> Container {
    let common = Container {
        name: NAME.to_owned(),
        ports: Some(container_ports(served, Server::Exporter)),
        resources: resources(m.exporter_resources, &[]),
        security_context: Some(security_context::container(e)),
        ..Container::default()
    };
    if e.security.sasl_secret.is_some() {
        Container {
            image: Some(hook_image.to_owned()),
            command: Some(vec![own_image::BINARY.to_owned()]),
            args: Some(stats_exporter_args(e)),
            volume_mounts: Some(vec![mount(AUTH_COPY_VOLUME, AUTH_COPY_MOUNT_PATH)]),
            ..common
        }
    } else {
        Container {
            image: Some(m.exporter_image.to_owned()),
            args: prometheus_exporter_args(e),
            ..common
        }
    }
}

/// The metrics sidecar of a proxy pod: the stats exporter of `hook_image` against the proxy's
/// plaintext `admin_port` on the pod's loopback, with the cache's exporter's port, resources and
/// security context.
#[must_use]
pub fn proxy_container(
    e: &Effective<'_>,
    m: &Monitoring<'_>,
    hook_image: &str,
    admin_port: i32,
) -> Container {
    Container {
        name: NAME.to_owned(),
        image: Some(hook_image.to_owned()),
        command: Some(vec![own_image::BINARY.to_owned()]),
        args: Some(vec![
            "stats-exporter".to_owned(),
            "--memcached-addr".to_owned(),
            format!("127.0.0.1:{admin_port}"),
        ]),
        ports: Some(container_ports(&[ports::METRICS], Server::Exporter)),
        resources: resources(m.exporter_resources, &[]),
        security_context: Some(security_context::container(e)),
        ..Container::default()
    }
}
