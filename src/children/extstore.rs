//! What `spec.extstore` adds to the pod: the volume holding memcached's extstore file (a
//! generic ephemeral volume claim or a size-limited `emptyDir`), its mount in memcached, and
//! `fsGroup` (unless the spec sets one) so memcached's user can write to a freshly formatted
//! volume. The `-o ext_path=...` option is in [`super::args`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EmptyDirVolumeSource, EphemeralVolumeSource, PersistentVolumeClaimSpec,
    PersistentVolumeClaimTemplate, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::volumes::writable_mount;
use crate::api::extstore::{Extstore, ExtstoreVolume, MOUNT_PATH};

/// The volume's name in the pod (an ephemeral claim is `<pod>-extstore`).
pub const VOLUME: &str = "extstore";

/// The volume of `x`: its size is the file's plus the filesystem's margin.
#[must_use]
pub fn volume(x: &Extstore<'_>) -> Volume {
    let size = Quantity(format!("{}Mi", x.volume_mib));
    match x.volume {
        ExtstoreVolume::EmptyDir => Volume {
            name: VOLUME.to_owned(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: None,
                size_limit: Some(size),
            }),
            ..Volume::default()
        },
        ExtstoreVolume::Ephemeral => Volume {
            name: VOLUME.to_owned(),
            ephemeral: Some(EphemeralVolumeSource {
                volume_claim_template: Some(PersistentVolumeClaimTemplate {
                    metadata: None,
                    spec: PersistentVolumeClaimSpec {
                        access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
                        storage_class_name: x.storage_class_name.map(str::to_owned),
                        resources: Some(VolumeResourceRequirements {
                            requests: Some(BTreeMap::from([("storage".to_owned(), size)])),
                            limits: None,
                        }),
                        ..PersistentVolumeClaimSpec::default()
                    },
                }),
            }),
            ..Volume::default()
        },
    }
}

/// memcached's mount of the volume.
#[must_use]
pub fn mount() -> VolumeMount {
    writable_mount(VOLUME, MOUNT_PATH)
}
