//! The reload-agent sidecar (issue 15): `memcached-hook reload-agent` from the hook's own image,
//! as a native sidecar (an init container with `restartPolicy: Always`, Kubernetes >= 1.29). It
//! watches the mounted SASL/TLS files and reloads them into memcached in place
//! (`src/agent/`), so a rotated Secret does not empty the cache.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, ResourceRequirements, SecurityContext, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{SASL_MOUNT_PATH, TLS_MOUNT_PATH, ports};
use crate::agent::METRICS_PORT;
use crate::api::effective::Effective;

/// The sidecar's name.
pub const NAME: &str = "reload-agent";
/// The image when the hook is not told otherwise: the hook's own release image.
pub const DEFAULT_IMAGE: &str = concat!("ghcr.io/c5c3/memcached-hook:", env!("CARGO_PKG_VERSION"));
/// The hook image's binary (its entrypoint runs `serve`).
const BINARY: &str = "/memcached-hook";
/// The user of the official memcached image (`USER memcache`, uid 11211). SIGHUP needs the
/// agent to run as memcached's user; used when no security context names a user.
pub const MEMCACHED_UID: i64 = 11211;

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
        .collect()
}

/// The agent's command line for the pod of `e`.
#[must_use]
pub fn args(e: &Effective<'_>) -> Vec<String> {
    let mut args = vec!["reload-agent".to_owned()];
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
            format!("{SASL_MOUNT_PATH}/password-file"),
        ]);
    }
    args.extend([
        "--admin-addr".to_owned(),
        format!("127.0.0.1:{}", ports::in_pod_plaintext(e)),
    ]);
    args
}

/// The security context: the spec's container context (applied to every container); with SASL
/// the agent signals memcached, so it runs as memcached's user unless a context names one.
fn security_context(e: &Effective<'_>) -> Option<SecurityContext> {
    let mut context = e.security.container_security_context.cloned();
    let named = context.as_ref().is_some_and(|c| c.run_as_user.is_some())
        || e.security
            .pod_security_context
            .is_some_and(|p| p.run_as_user.is_some());
    if e.security.sasl_secret.is_some() && !named {
        context
            .get_or_insert_with(SecurityContext::default)
            .run_as_user = Some(MEMCACHED_UID);
    }
    context
}

/// The sidecar, mounting the same Secret volumes as memcached.
#[must_use]
pub fn container(e: &Effective<'_>, image: &str, mounts: &[VolumeMount]) -> Container {
    Container {
        name: NAME.to_owned(),
        image: Some(image.to_owned()),
        command: Some(vec![BINARY.to_owned()]),
        args: Some(args(e)),
        ports: Some(vec![ContainerPort {
            name: Some("reload-metrics".to_owned()),
            container_port: i32::from(METRICS_PORT),
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }]),
        resources: Some(ResourceRequirements {
            requests: Some(quantities(&[("cpu", "10m"), ("memory", "16Mi")])),
            limits: Some(quantities(&[("memory", "64Mi")])),
            claims: None,
        }),
        restart_policy: Some("Always".to_owned()),
        security_context: security_context(e),
        volume_mounts: (!mounts.is_empty()).then(|| mounts.to_vec()),
        ..Container::default()
    }
}
