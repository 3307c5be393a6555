//! The reload-agent sidecar: `memcached-hook reload-agent` from the hook's own image,
//! as a native sidecar (an init container with `restartPolicy: Always`, Kubernetes >= 1.29). It
//! watches the mounted SASL/TLS files and reloads them into memcached in place
//! (`src/pod/reload_agent/`), so a rotated Secret does not empty the cache. In a pod of
//! memcached's proxy it runs in proxy mode: it watches the mounted route configuration and has
//! the proxy load a new one by SIGHUP, so a new membership does not restart the proxies.

use k8s_openapi::api::core::v1::{Container, ResourceRequirements, VolumeMount};

use super::own_image::BINARY;
use super::resources::quantities;
use super::{
    AUTH_COPY_FILE, SASL_SECRET_FILE, TLS_MOUNT_PATH, agent_access, ports, security_context,
};
use crate::api::effective::Effective;

/// The sidecar's name.
pub const NAME: &str = "reload-agent";

/// The agent's command line for the pod of `e`; `reports`: it writes each reload's outcome on
/// its own Pod.
#[must_use]
pub fn args(e: &Effective<'_>, reports: bool) -> Vec<String> {
    let mut args = vec!["reload-agent".to_owned()];
    if reports {
        args.push(agent_access::AGENT_FLAG.to_owned());
    }
    if let Some(tls) = e.security.tls {
        args.extend([
            "--tls-cert".to_owned(),
            format!("{TLS_MOUNT_PATH}/tls.crt"),
            "--tls-key".to_owned(),
            format!("{TLS_MOUNT_PATH}/tls.key"),
        ]);
        if tls.client_cert {
            args.extend(["--tls-ca".to_owned(), format!("{TLS_MOUNT_PATH}/ca.crt")]);
        }
    }
    if e.security.sasl_secret.is_some() {
        args.extend([
            "--auth-file".to_owned(),
            SASL_SECRET_FILE.to_owned(),
            "--auth-copy".to_owned(),
            AUTH_COPY_FILE.to_owned(),
        ]);
    }
    args.extend([
        "--admin-addr".to_owned(),
        format!("127.0.0.1:{}", ports::in_pod_plaintext(e)),
    ]);
    args
}

/// The agent's command line in a proxy pod: the mounted `routes` file, and the proxy's
/// plaintext listener on the pod's loopback at `admin_port`.
#[must_use]
pub fn proxy_args(routes: &str, admin_port: i32) -> Vec<String> {
    vec![
        "reload-agent".to_owned(),
        "--proxy-routes".to_owned(),
        routes.to_owned(),
        "--admin-addr".to_owned(),
        format!("127.0.0.1:{admin_port}"),
    ]
}

/// The sidecar with `mounts`: the Secret volumes, and the auth file copy it rewrites (and its
/// API token when it `reports`).
#[must_use]
pub fn container(
    e: &Effective<'_>,
    image: &str,
    mounts: &[VolumeMount],
    reports: bool,
) -> Container {
    Container {
        env: reports.then(agent_access::env),
        ..sidecar(e, image, args(e, reports), mounts)
    }
}

/// The sidecar in a proxy pod of `e`, watching the `routes` file it finds through `mount` and
/// reaching the proxy on the loopback at `admin_port`.
#[must_use]
pub fn proxy_container(
    e: &Effective<'_>,
    image: &str,
    (routes, admin_port): (&str, i32),
    mount: VolumeMount,
) -> Container {
    sidecar(e, image, proxy_args(routes, admin_port), &[mount])
}

/// The sidecar running `args` with `mounts`.
fn sidecar(e: &Effective<'_>, image: &str, args: Vec<String>, mounts: &[VolumeMount]) -> Container {
    Container {
        name: NAME.to_owned(),
        image: Some(image.to_owned()),
        command: Some(vec![BINARY.to_owned()]),
        args: Some(args),
        ports: Some(ports::container_ports(
            &[ports::RELOAD_METRICS],
            ports::Server::ReloadAgent,
        )),
        resources: Some(ResourceRequirements {
            requests: Some(quantities(&[("cpu", "10m"), ("memory", "16Mi")])),
            limits: Some(quantities(&[("memory", "64Mi")])),
            claims: None,
        }),
        restart_policy: Some("Always".to_owned()),
        // SIGHUP needs the agent to run as memcached's user (the proxy's, in a proxy pod): every
        // container of the pod runs as the pod's user unless `containerSecurityContext`
        // (applied to all of them) names one.
        security_context: Some(security_context::container(e)),
        volume_mounts: (!mounts.is_empty()).then(|| mounts.to_vec()),
        ..Container::default()
    }
}
