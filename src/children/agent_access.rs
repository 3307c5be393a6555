//! The reload agent's access to its own Pod: with the hook's `--relate-pods` and a spec whose
//! Secrets are reloaded in place, the agent writes each reload's outcome as the condition
//! [`RELOAD_CONDITION`](crate::hook::RELOAD_CONDITION) on its own Pod (`pods/status`), and the
//! hook reads it from the related Pods. For that the pods run as the ServiceAccount
//! `<name>-reload-agent`, bound in the namespace to the ClusterRole [`CLUSTER_ROLE`] that the
//! hook's install ships; only the agent container mounts a token.

use k8s_openapi::api::core::v1::{
    ConfigMapProjection, DownwardAPIProjection, DownwardAPIVolumeFile, EnvVar, EnvVarSource,
    KeyToPath, ObjectFieldSelector, ProjectedVolumeSource, ServiceAccount,
    ServiceAccountTokenProjection, Volume, VolumeMount, VolumeProjection,
};
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};

use super::labels;

/// The Pod condition the agent writes and the hook reads.
/// The ClusterRole the RoleBinding grants (`pods/status` `patch`), installed with the hook.
pub const CLUSTER_ROLE: &str = "memcached-hook-reload-agent";
/// The ServiceAccount's and the RoleBinding's name is the parent's with this suffix.
const SUFFIX: &str = "-reload-agent";
/// The projected volume with the agent's token, the cluster's CA and the namespace.
const VOLUME: &str = "reload-agent-api";
/// Where in-cluster clients look for them.
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// Lifetime asked for the agent's token; the kubelet renews it before it ends.
const TOKEN_SECONDS: i64 = 3600;

/// The ServiceAccount's (and the RoleBinding's) name for the Memcached `name`.
#[must_use]
pub fn account_name(name: &str) -> String {
    format!("{name}{SUFFIX}")
}

/// The ServiceAccount the pods run as. It mounts no token by itself: the pod template mounts one
/// into the agent only.
#[must_use]
pub fn service_account(name: &str) -> ServiceAccount {
    let mut metadata = labels::metadata(name);
    metadata.name = Some(account_name(name));
    ServiceAccount {
        metadata,
        automount_service_account_token: Some(false),
        ..ServiceAccount::default()
    }
}

/// The RoleBinding of the ServiceAccount to [`CLUSTER_ROLE`] in the parent's `namespace`.
#[must_use]
pub fn role_binding(name: &str, namespace: &str) -> RoleBinding {
    let mut metadata = labels::metadata(name);
    metadata.name = Some(account_name(name));
    RoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: CLUSTER_ROLE.to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: account_name(name),
            namespace: Some(namespace.to_owned()),
            api_group: None,
        }]),
    }
}

/// The projected volume with the token, `ca.crt` and `namespace`, as the kubelet mounts them
/// for a pod that automounts its token.
#[must_use]
pub(super) fn volume() -> Volume {
    let projections = vec![
        VolumeProjection {
            service_account_token: Some(ServiceAccountTokenProjection {
                path: "token".to_owned(),
                expiration_seconds: Some(TOKEN_SECONDS),
                audience: None,
            }),
            ..VolumeProjection::default()
        },
        VolumeProjection {
            config_map: Some(ConfigMapProjection {
                name: "kube-root-ca.crt".to_owned(),
                items: Some(vec![KeyToPath {
                    key: "ca.crt".to_owned(),
                    path: "ca.crt".to_owned(),
                    mode: None,
                }]),
                optional: None,
            }),
            ..VolumeProjection::default()
        },
        VolumeProjection {
            downward_api: Some(DownwardAPIProjection {
                items: Some(vec![DownwardAPIVolumeFile {
                    path: "namespace".to_owned(),
                    field_ref: Some(field("metadata.namespace")),
                    ..DownwardAPIVolumeFile::default()
                }]),
            }),
            ..VolumeProjection::default()
        },
    ];
    Volume {
        name: VOLUME.to_owned(),
        projected: Some(ProjectedVolumeSource {
            sources: Some(projections),
            default_mode: None,
        }),
        ..Volume::default()
    }
}

/// The agent's mount of [`volume`].
#[must_use]
pub(super) fn mount() -> VolumeMount {
    super::volumes::mount(VOLUME, MOUNT_PATH)
}

/// The agent's flag that makes it write [`RELOAD_CONDITION`](crate::hook::RELOAD_CONDITION).
pub(super) const AGENT_FLAG: &str = "--pod-condition";

/// `POD_NAME` and `POD_NAMESPACE` from the downward API.
#[must_use]
pub(super) fn env() -> Vec<EnvVar> {
    [
        ("POD_NAME", "metadata.name"),
        ("POD_NAMESPACE", "metadata.namespace"),
    ]
    .into_iter()
    .map(|(name, path)| EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(field(path)),
            ..EnvVarSource::default()
        }),
    })
    .collect()
}

fn field(path: &str) -> ObjectFieldSelector {
    ObjectFieldSelector {
        api_version: None,
        field_path: path.to_owned(),
    }
}
