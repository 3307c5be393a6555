//! What `spec.warmRestart` adds to the StatefulSet (docs/warm-restart.md): a volume claim per
//! pod holding memcached's item memory (`-e`), the guard that checks the saved metadata before
//! memcached starts, and a preStop hook that stops memcached with SIGUSR1 so it saves them.
//!
//! The guard and the preStop hook are the hook's own static binary: the guard (an init
//! container of the hook's image) copies it into an `emptyDir`, where the memcached container's
//! preStop hook runs it. That works whatever the memcached image holds (no shell needed) and
//! with `shareProcessNamespace`, where memcached is not PID 1.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec,
};
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, ExecAction, Lifecycle, LifecycleHandler,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSpec, Volume, VolumeMount,
    VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::own_image::BINARY;
use super::security_context;
use crate::api::effective::Effective;
use crate::api::quantity::canonicalize;
use crate::api::warm_restart::WarmRestart;
use crate::hook::ObservedChild;

/// The claim template (each pod's claim is `warm-restart-<name>-<ordinal>`) and its volume.
pub const VOLUME: &str = "warm-restart";
/// Where the volume is mounted in memcached and the guard.
pub const MOUNT_PATH: &str = "/warm-restart";
/// memcached's item memory file (`-e`); memcached writes `<file>.meta` on a graceful stop.
pub const MEMORY_FILE: &str = "/warm-restart/memory";
/// The `emptyDir` the guard copies the hook's binary into, for the preStop hook.
pub const BIN_VOLUME: &str = "warm-restart-bin";
/// Where [`BIN_VOLUME`] is mounted.
pub const BIN_PATH: &str = "/warm-restart-bin";
/// The init container that checks the metadata before memcached starts.
pub const GUARD: &str = "warm-restart-guard";
/// How the guard's one-line result (its termination message) starts when memcached restores
/// the saved items; `status` reads it back.
pub const GUARD_RESTORE: &str = "restore:";
/// How the guard's one-line result starts when memcached starts empty; the reason follows.
pub const GUARD_COLD: &str = "cold:";
/// Seconds memcached is given to stop with SIGUSR1, besides one per GiB of item memory. The
/// stop takes about a second whatever the size (docs/warm-restart.md, measured): memcached
/// notices the signal at its next clock tick and writes a metadata file of under 1 KiB; the
/// item memory is a shared file mapping whose pages are already in the file.
pub const STOP_SECONDS: i64 = 30;

/// Whether an observed StatefulSet's volume claim templates are the ones `e` asks for (none
/// without warm restart): the API server refuses any change to them.
#[must_use]
pub fn claims_match(observed: &ObservedChild, e: &Effective<'_>) -> bool {
    let observed = observed
        .spec
        .volume_claim_templates
        .as_deref()
        .unwrap_or_default();
    match (&e.warm_restart, observed) {
        (None, claims) => claims.is_empty(),
        (Some(w), [claim]) => {
            let storage = claim.spec.resources.requests.storage.as_deref();
            claim.metadata.name.as_deref() == Some(VOLUME)
                && claim.spec.storage_class_name.as_deref() == w.storage_class_name
                && storage.map(|s| canonicalize(s).unwrap_or_else(|_| s.to_owned()))
                    == Some(w.size.clone())
        }
        (Some(_), _) => false,
    }
}

/// The binary's path in the `emptyDir`.
fn copied_binary() -> String {
    format!("{BIN_PATH}{BINARY}")
}

/// The grace period that lets memcached stop gracefully: the preStop delay of
/// `highAvailability.gracefulShutdown` (if any), [`STOP_SECONDS`] and a second per GiB of
/// item memory; never shorter than the one the spec asks for.
#[must_use]
pub fn termination_grace_period_seconds(e: &Effective<'_>) -> i64 {
    let graceful = e.high_availability.graceful_shutdown;
    let delay = graceful.map_or(0, |g| i64::from(g.pre_stop_delay_seconds));
    let per_gib = (i64::from(e.memcached.max_memory_mb) + 1023) / 1024;
    let needed = delay + STOP_SECONDS + per_gib;
    graceful.map_or(needed, |g| g.termination_grace_period_seconds.max(needed))
}

/// The claim template of each pod's volume.
fn claim_template(w: &WarmRestart<'_>) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(VOLUME.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            storage_class_name: w.storage_class_name.map(str::to_owned),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_owned(),
                    Quantity(w.size.clone()),
                )])),
                limits: None,
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}

/// The guard's command line: the checks, then memcached's own arguments (the memory layout
/// the saved items must match).
fn guard_args(w: &WarmRestart<'_>, memcached_args: &[String]) -> Vec<String> {
    let mut args = vec![
        "warm-guard".to_owned(),
        "--file".to_owned(),
        MEMORY_FILE.to_owned(),
        "--max-stale-seconds".to_owned(),
        w.max_stale_seconds.to_string(),
        "--copy-binary-to".to_owned(),
        copied_binary(),
        "--".to_owned(),
    ];
    args.extend(memcached_args.iter().cloned());
    args
}

fn guard(e: &Effective<'_>, w: &WarmRestart<'_>, image: &str, args: &[String]) -> Container {
    Container {
        name: GUARD.to_owned(),
        image: Some(image.to_owned()),
        command: Some(vec![BINARY.to_owned()]),
        args: Some(guard_args(w, args)),
        security_context: Some(security_context::container(e)),
        volume_mounts: Some(vec![
            writable(VOLUME, MOUNT_PATH),
            writable(BIN_VOLUME, BIN_PATH),
        ]),
        ..Container::default()
    }
}

fn writable(volume: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: volume.to_owned(),
        mount_path: path.to_owned(),
        ..VolumeMount::default()
    }
}

/// The preStop hook: (after the graceful-shutdown delay) SIGUSR1 to memcached, then wait for it
/// to exit.
fn pre_stop(e: &Effective<'_>) -> Lifecycle {
    let delay = e
        .high_availability
        .graceful_shutdown
        .map_or(0, |g| g.pre_stop_delay_seconds);
    Lifecycle {
        pre_stop: Some(LifecycleHandler {
            exec: Some(ExecAction {
                command: Some(vec![
                    copied_binary(),
                    "warm-stop".to_owned(),
                    "--file".to_owned(),
                    MEMORY_FILE.to_owned(),
                    "--delay-seconds".to_owned(),
                    delay.to_string(),
                ]),
            }),
            ..LifecycleHandler::default()
        }),
        ..Lifecycle::default()
    }
}

/// Adds warm restart to a StatefulSet spec built for `e` (which has it enabled): the claim
/// template, the retention policy, the guard, `-e` and the preStop hook of memcached, the
/// grace period, and `fsGroup` (the default user's, unless the spec sets one) so memcached's user
/// can write to a freshly formatted volume.
pub fn apply(spec: &mut StatefulSetSpec, e: &Effective<'_>, w: &WarmRestart<'_>, image: &str) {
    spec.volume_claim_templates = Some(vec![claim_template(w)]);
    // Scale-down deletes the claims of the removed pods and deleting the StatefulSet deletes
    // them all: a pod that comes back later starts empty instead of with items nobody could
    // invalidate meanwhile. A rolling update keeps every claim.
    spec.persistent_volume_claim_retention_policy =
        Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
            when_deleted: Some("Delete".to_owned()),
            when_scaled: Some("Delete".to_owned()),
        });
    let Some(pod) = spec.template.spec.as_mut() else {
        return;
    };
    apply_to_pod(pod, e, w, image);
}

fn apply_to_pod(pod: &mut PodSpec, e: &Effective<'_>, w: &WarmRestart<'_>, image: &str) {
    let Some(memcached) = pod.containers.iter_mut().find(|c| c.name == "memcached") else {
        return;
    };
    let args = memcached.args.get_or_insert_default();
    args.extend(["-e".to_owned(), MEMORY_FILE.to_owned()]);
    let guard = guard(e, w, image, args);
    memcached
        .volume_mounts
        .get_or_insert_default()
        .extend([writable(VOLUME, MOUNT_PATH), writable(BIN_VOLUME, BIN_PATH)]);
    memcached.lifecycle = Some(pre_stop(e));
    // The guard runs before memcached and before any native sidecar.
    pod.init_containers.get_or_insert_default().insert(0, guard);
    pod.volumes.get_or_insert_default().push(Volume {
        name: BIN_VOLUME.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    });
    pod.termination_grace_period_seconds = Some(termination_grace_period_seconds(e));
    // memcached's user writes the claim: the kubelet gives a freshly formatted volume to fsGroup.
    pod.security_context = Some(security_context::pod(e, true));
}
