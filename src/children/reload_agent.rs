//! The reload-agent sidecar: `memcached-hook reload-agent` from the hook's own image,
//! as a native sidecar (an init container with `restartPolicy: Always`, Kubernetes >= 1.29). It
//! watches the mounted SASL/TLS files and reloads them into memcached in place
//! (`src/agent/`), so a rotated Secret does not empty the cache.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ResourceRequirements, VolumeMount};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{
    AUTH_COPY_FILE, SASL_SECRET_FILE, TLS_MOUNT_PATH, agent_access, ports, security_context,
};
use crate::api::effective::Effective;

/// The sidecar's name.
pub const NAME: &str = "reload-agent";
/// The image when the hook is not told otherwise: the placeholder name the manifests use too
/// (deploy/ and the chart set `--reload-agent-image` to the image they run).
pub const DEFAULT_IMAGE: &str = concat!(
    "registry.example.com/memcached-hook:",
    env!("CARGO_PKG_VERSION")
);
/// The registry of the placeholder: no cluster can pull from it.
const PLACEHOLDER_REGISTRY: &str = "registry.example.com/";

/// Whether `image` is still the placeholder (or another image from its registry): pods with the
/// agent would stay in `ImagePullBackOff`.
#[must_use]
pub fn is_placeholder(image: &str) -> bool {
    image.trim().starts_with(PLACEHOLDER_REGISTRY)
}
/// The hook image's binary (its entrypoint runs `serve`).
pub(super) const BINARY: &str = "/memcached-hook";

pub(super) fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
        .collect()
}

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
        name: NAME.to_owned(),
        image: Some(image.to_owned()),
        command: Some(vec![BINARY.to_owned()]),
        args: Some(args(e, reports)),
        env: reports.then(agent_access::env),
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
        // SIGHUP needs the agent to run as memcached's user: every container of the pod runs as
        // the pod's user unless `containerSecurityContext` (applied to all of them) names one.
        security_context: Some(security_context::container(e)),
        volume_mounts: (!mounts.is_empty()).then(|| mounts.to_vec()),
        ..Container::default()
    }
}

#[cfg(test)]
mod placeholder_tests {
    #[test]
    fn the_placeholder_is_recognised_and_a_real_image_is_not() {
        assert!(super::is_placeholder(super::DEFAULT_IMAGE));
        assert!(super::is_placeholder(
            "registry.example.com/memcached-hook:0.0.1"
        ));
        assert!(!super::is_placeholder("ghcr.io/corp/memcached-hook:0.1.0"));
        assert!(!super::is_placeholder(
            "registry.corp/registry.example.com/x:1"
        ));
    }
}
