//! The `auth-file` init step of a pod with SASL: `memcached-hook auth-file` from the hook's own
//! image writes the normalised copy of the Secret's auth file that memcached's `-Y` reads
//! (`src/pod/auth_file.rs`) into an in-memory `emptyDir`, before memcached (and the reload
//! agent) start. It runs in both rotation modes; under `Reload` the agent rewrites the copy.

use k8s_openapi::api::core::v1::{Container, EmptyDirVolumeSource, ResourceRequirements, Volume};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::volumes::{AUTH_COPY_VOLUME, SASL_VOLUME, mount, writable_mount};
use super::{
    AUTH_COPY_FILE, AUTH_COPY_MOUNT_PATH, SASL_MOUNT_PATH, SASL_SECRET_FILE, own_image, resources,
    security_context,
};
use crate::api::effective::Effective;

/// The init container's name.
pub const NAME: &str = "auth-file";
/// The copy's volume size: memcached reads at most 8 lines of 255 bytes.
const SIZE_LIMIT: &str = "64Ki";

/// The in-memory volume holding memcached's copy: never written to the node's disk.
#[must_use]
pub fn volume() -> Volume {
    Volume {
        name: AUTH_COPY_VOLUME.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".to_owned()),
            size_limit: Some(Quantity(SIZE_LIMIT.to_owned())),
        }),
        ..Volume::default()
    }
}

/// The init container of the pods of `e` (which have SASL on), from `image`.
#[must_use]
pub fn container(e: &Effective<'_>, image: &str) -> Container {
    Container {
        name: NAME.to_owned(),
        image: Some(image.to_owned()),
        command: Some(vec![own_image::BINARY.to_owned()]),
        args: Some(vec![
            "auth-file".to_owned(),
            "--from".to_owned(),
            SASL_SECRET_FILE.to_owned(),
            "--to".to_owned(),
            AUTH_COPY_FILE.to_owned(),
        ]),
        resources: Some(ResourceRequirements {
            requests: Some(resources::quantities(&[("cpu", "10m"), ("memory", "16Mi")])),
            limits: Some(resources::quantities(&[("memory", "64Mi")])),
            claims: None,
        }),
        security_context: Some(security_context::container(e)),
        // Why it failed stays in the pod's status (`lastState.terminated.message`): the log
        // names the file and the line at fault, never the content.
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        volume_mounts: Some(vec![
            mount(SASL_VOLUME, SASL_MOUNT_PATH),
            writable_mount(AUTH_COPY_VOLUME, AUTH_COPY_MOUNT_PATH),
        ]),
        ..Container::default()
    }
}
