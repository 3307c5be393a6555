//! The reload-agent sidecar: `memcached-hook reload-agent` from the hook's own image,
//! as a native sidecar (an init container with `restartPolicy: Always`, Kubernetes >= 1.29). It
//! watches the mounted SASL/TLS files and reloads them into memcached in place
//! (`src/agent/`), so a rotated Secret does not empty the cache.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, ResourceRequirements, SecurityContext, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{AUTH_COPY_FILE, SASL_SECRET_FILE, TLS_MOUNT_PATH, ports};
use crate::agent::METRICS_PORT;
use crate::api::effective::Effective;

/// The sidecar's name.
pub const NAME: &str = "reload-agent";
/// The image when the hook is not told otherwise: the placeholder name the manifests use too
/// (deploy/ and the chart set `--reload-agent-image` to the image they run).
pub const DEFAULT_IMAGE: &str = concat!(
    "registry.example.com/memcached-hook:",
    env!("CARGO_PKG_VERSION")
);
/// The hook image's binary (its entrypoint runs `serve`).
pub(super) const BINARY: &str = "/memcached-hook";
/// The user of the official memcached image (`USER memcache`, uid 11211). SIGHUP needs the
/// agent to run as memcached's user; used when no security context names a user.
pub const MEMCACHED_UID: i64 = 11211;

/// How changes to the referenced Secrets reach the pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// The reload agent reloads them in place.
    Reload,
    /// `secretRotation: RollingRestart`: the pods roll.
    RollingRestart,
    /// `Reload` asked, but the image's memcached predates the reload it needs (`1.5.13` for
    /// `refresh_certs`, `1.5.15` for SIGHUP re-reading `-Y`): the pods roll.
    TooOld(&'static str),
}

/// `major.minor[.patch]` at the start of the image tag (`1.6.38`, `1.5-alpine`); `None` for a
/// digest, no tag or another tag (`latest`), which are taken to be recent.
fn tag_version(image: &str) -> Option<(u32, u32, u32)> {
    if image.contains('@') {
        return None;
    }
    let (_, tag) = image.rsplit_once(':')?;
    if tag.contains('/') {
        return None; // a registry port, no tag
    }
    let numeric = tag.split(['-', '_']).next()?;
    let mut parts = numeric.split('.').map(str::parse::<u32>);
    let major = parts.next()?.ok()?;
    let minor = parts.next()?.ok()?;
    // `1.5` names the newest 1.5.x
    let patch = match parts.next() {
        Some(p) => p.ok()?,
        None => u32::MAX,
    };
    Some((major, minor, patch))
}

/// How Secret changes reach the pods of `e`; `None` without SASL and TLS.
#[must_use]
pub fn rotation(e: &Effective<'_>) -> Option<Rotation> {
    use crate::api::security::SecretRotation;
    let sasl = e.security.sasl_secret.is_some();
    if !sasl && e.security.tls.is_none() {
        return None;
    }
    if e.security.secret_rotation == SecretRotation::RollingRestart {
        return Some(Rotation::RollingRestart);
    }
    let (needs, version) = if sasl {
        ("1.5.15", (1, 5, 15))
    } else {
        ("1.5.13", (1, 5, 13))
    };
    Some(match tag_version(e.image) {
        Some(v) if v < version => Rotation::TooOld(needs),
        _ => Rotation::Reload,
    })
}

/// Whether the pods of `e` run the reload agent.
#[must_use]
pub fn applies(e: &Effective<'_>) -> bool {
    rotation(e) == Some(Rotation::Reload)
}

pub(super) fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
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

/// The security context: the spec's container context (applied to every container); with SASL
/// the agent signals memcached, so it runs as memcached's user unless a context names one (the
/// auth-file init step too).
pub(super) fn security_context(e: &Effective<'_>) -> Option<SecurityContext> {
    if e.security.sasl_secret.is_some() {
        as_memcached_user(e)
    } else {
        e.security.container_security_context.cloned()
    }
}

/// The spec's container security context, run as memcached's user unless a context names one:
/// for a container that signals memcached or reads the files it writes.
pub(super) fn as_memcached_user(e: &Effective<'_>) -> Option<SecurityContext> {
    let mut context = e.security.container_security_context.cloned();
    let named = context.as_ref().is_some_and(|c| c.run_as_user.is_some())
        || e.security
            .pod_security_context
            .is_some_and(|p| p.run_as_user.is_some());
    if !named {
        context
            .get_or_insert_with(SecurityContext::default)
            .run_as_user = Some(MEMCACHED_UID);
    }
    context
}

/// The sidecar with `mounts`: the Secret volumes, and the auth file copy it rewrites.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags() {
        assert_eq!(tag_version("memcached:1.6.38"), Some((1, 6, 38)));
        assert_eq!(tag_version("memcached:1.5.12-alpine"), Some((1, 5, 12)));
        assert_eq!(tag_version("memcached:1.6"), Some((1, 6, u32::MAX)));
        for none in [
            "memcached",
            "memcached:latest",
            "host:5000/memcached",
            "memcached:1.6@sha256:ab",
        ] {
            assert_eq!(tag_version(none), None, "{none}");
        }
    }

    #[test]
    fn too_old_images_fall_back_to_rolling_restarts() {
        let spec = |image: &str, sasl: bool| -> crate::api::MemcachedSpec {
            let mut security = serde_json::json!({"tls": {"enabled": true, "certificateSecretRef": {"name": "t"}}});
            if sasl {
                security["sasl"] =
                    serde_json::json!({"enabled": true, "credentialsSecretRef": {"name": "s"}});
            }
            serde_json::from_value(serde_json::json!({"image": image, "security": security}))
                .unwrap()
        };
        let of = |image: &str, sasl: bool| rotation(&Effective::of(&spec(image, sasl)));
        assert_eq!(of("memcached:1.6.18", true), Some(Rotation::Reload));
        assert_eq!(of("memcached:1.5.14", false), Some(Rotation::Reload));
        assert_eq!(
            of("memcached:1.5.14", true),
            Some(Rotation::TooOld("1.5.15"))
        );
        assert_eq!(
            of("memcached:1.5.12", false),
            Some(Rotation::TooOld("1.5.13"))
        );
        assert_eq!(of("memcached:latest", true), Some(Rotation::Reload));
        assert_eq!(
            rotation(&Effective::of(&crate::api::MemcachedSpec::default())),
            None
        );
    }
}
