//! What `spec.extstore` adds to the pod: the volume holding memcached's extstore file (a
//! generic ephemeral volume claim or a size-limited `emptyDir`), its mount in memcached, and
//! `fsGroup` (unless the spec sets one) so memcached's user can write to a freshly formatted
//! volume. The `-o ext_path=...` option is in [`super::args`].

use std::collections::BTreeMap;

use super::volumes::writable_mount;
use crate::api::extstore::{Extstore, ExtstoreVolume, MOUNT_PATH};
use crate::api::quantity;
use k8s_openapi::api::core::v1::{
    EmptyDirVolumeSource, EphemeralVolumeSource, PersistentVolumeClaimSpec,
    PersistentVolumeClaimTemplate, Volume, VolumeMount, VolumeResourceRequirements,
};

/// The volume's name in the pod (an ephemeral claim is `<pod>-extstore`).
pub const VOLUME: &str = "extstore";

/// The volume of `x`: its size is the file's plus the filesystem's margin.
#[must_use]
pub fn volume(x: &Extstore<'_>) -> Volume {
    let size = quantity::mebibytes(x.volume_mib);
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

/// What the extstore file takes of the node's disk, in MiB, when it lives there (`EmptyDir`):
/// the container requests it as `ephemeral-storage`, so the scheduler places the pod on a node
/// with room for the file and the kubelet, short of disk, evicts first the pods that use more
/// than they requested. No limit: the volume's `sizeLimit` already bounds the file, and a
/// container limit would also count the container's logs.
#[must_use]
pub fn node_disk_mib(x: &Extstore<'_>) -> Option<i64> {
    (x.volume == ExtstoreVolume::EmptyDir).then_some(x.size_mib)
}

/// memcached's mount of the volume.
#[must_use]
pub fn mount() -> VolumeMount {
    writable_mount(VOLUME, MOUNT_PATH)
}
