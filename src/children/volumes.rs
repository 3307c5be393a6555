//! The pod's Secret volumes and the mounts every container builder uses.

use k8s_openapi::api::core::v1::{KeyToPath, SecretVolumeSource, Volume, VolumeMount};

/// The volume of the SASL Secret.
pub(super) const SASL_VOLUME: &str = "sasl-credentials";
/// The in-memory volume with memcached's copy of the auth file.
pub(super) const AUTH_COPY_VOLUME: &str = "sasl-auth-file";
/// The volume of the TLS Secret.
pub(super) const TLS_VOLUME: &str = "tls-certificates";

/// A volume with the `keys` of the Secret `secret`, each at its own name.
pub(super) fn secret_volume(volume: &str, secret: &str, keys: &[&str]) -> Volume {
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

/// A read-only mount.
pub(super) fn mount(volume: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: volume.to_owned(),
        mount_path: path.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    }
}

/// A mount the container writes to.
pub(super) fn writable_mount(volume: &str, path: &str) -> VolumeMount {
    VolumeMount {
        read_only: None,
        ..mount(volume, path)
    }
}
