//! `spec.warmRestart`: memcached keeps its items across a restart of its pod, in a file on a
//! volume of its own (docs/warm-restart.md).
//!
//! memcached's item memory lives in a file (`-e`); a graceful stop (SIGUSR1) writes the
//! file's metadata next to it, and the next start with the same memory layout restores every
//! item. Only a StatefulSet gives each pod a volume that outlives it.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::check::{self, Out, Violation, Zero, quoted};
use super::command_line::CommandLine;
use super::{MemcachedSpec, Workload};

/// Default of `maxStaleSeconds`: a restart within five minutes of the stop restores the items.
pub const DEFAULT_MAX_STALE_SECONDS: i32 = 300;
/// Bounds of `maxStaleSeconds` (one day at most).
pub const MAX_STALE_SECONDS: (i32, i32) = (1, 86_400);
/// The longest storage class name (a DNS subdomain).
pub const STORAGE_CLASS_LENGTH: usize = 253;
/// The pattern of a storage class name: a DNS subdomain, as the API server requires of a
/// claim's class (empty: the cluster's default class).
pub const STORAGE_CLASS_PATTERN: &str = super::pod::SECRET_NAME_PATTERN;
/// MiB the default volume size adds to `maxMemoryMB`: the metadata file (under 1 KiB) and a
/// filesystem's own structures (an ext4 journal of up to 64 MiB).
pub const SIZE_FIXED_MIB: i64 = 64;
/// The default volume size adds one MiB per this many MiB of `maxMemoryMB`: the blocks a
/// filesystem reserves (5 % on ext4) and its inode tables.
pub const SIZE_MIB_PER_EXTRA_MIB: i64 = 16;

/// CEL rule (on the spec): warm restart needs a StatefulSet.
pub const WORKLOAD_RULE: &str = "!has(self.warmRestart) || !has(self.warmRestart.enabled) || \
    !self.warmRestart.enabled || (has(self.workload) && self.workload == 'StatefulSet')";
/// The message of [`WORKLOAD_RULE`].
pub const WORKLOAD_MESSAGE: &str = "warmRestart.enabled needs workload StatefulSet: only a \
    StatefulSet gives each pod a volume that outlives it";

/// Warm restart: memcached keeps its items across a restart of its pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WarmRestartSpec {
    /// Keep the items across a restart (memcached `-e` on a volume per pod, stopped with
    /// SIGUSR1). Needs `workload: StatefulSet`. Not with memcached's extstore (`spec.extstore`,
    /// or `-o ext_path` in `extraArgs`): memcached 1.6.18 starts with both but never restores.
    /// Turning it on or off, or changing the volume, on
    /// a running cache replaces the StatefulSet through a Deployment (the cache starts cold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enabled: Option<bool>,

    /// StorageClass of each pod's volume (a DNS subdomain); the cluster's default class when
    /// unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = STORAGE_CLASS_LENGTH), regex(pattern = STORAGE_CLASS_PATTERN))]
    pub storage_class_name: Option<String>,

    /// Size of each pod's volume. Default: `maxMemoryMB + ceil(maxMemoryMB / 16) + 64` MiB
    /// (the item memory file is exactly `maxMemoryMB` MiB; the rest is the filesystem's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<KubeQuantity>,

    /// A pod restarted more than this many seconds after its memcached stopped starts with an
    /// empty cache: the items may have gone stale while no client could delete or overwrite
    /// them (a scale-down followed by a scale-up, a node down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = MAX_STALE_SECONDS.0, max = MAX_STALE_SECONDS.1),
        extend("default" = DEFAULT_MAX_STALE_SECONDS)
    )]
    pub max_stale_seconds: Option<i32>,
}

/// Warm restart with every default applied (present only when enabled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarmRestart<'a> {
    /// StorageClass of the volume, when named.
    pub storage_class_name: Option<&'a str>,
    /// The volume size, canonical (`132Mi`).
    pub size: String,
    /// The staleness bound of the guard.
    pub max_stale_seconds: i32,
}

/// The default volume size for `max_memory_mb` of item memory, in MiB.
#[must_use]
pub fn default_size_mib(max_memory_mb: i32) -> i64 {
    let mb = i64::from(max_memory_mb.max(0));
    mb + (mb + SIZE_MIB_PER_EXTRA_MIB - 1) / SIZE_MIB_PER_EXTRA_MIB + SIZE_FIXED_MIB
}

impl<'a> WarmRestart<'a> {
    /// Resolves the defaults of an enabled `spec.warmRestart`; `None` when it is off.
    #[must_use]
    pub fn of(spec: Option<&'a WarmRestartSpec>, max_memory_mb: i32) -> Option<Self> {
        let spec = spec.filter(|w| w.enabled == Some(true))?;
        let size = match &spec.size {
            Some(q) => super::quantity::canonical(q).0,
            None => super::quantity::mebibytes(default_size_mib(max_memory_mb)).0,
        };
        Some(Self {
            storage_class_name: spec.storage_class_name.as_deref().filter(|s| !s.is_empty()),
            size,
            max_stale_seconds: spec.max_stale_seconds.unwrap_or(DEFAULT_MAX_STALE_SECONDS),
        })
    }
}

/// The field rules of `spec.warmRestart`.
pub(super) fn validate(out: &mut Out, w: &WarmRestartSpec) {
    let stale = w.max_stale_seconds.map(i64::from);
    let bounds = (
        i64::from(MAX_STALE_SECONDS.0),
        i64::from(MAX_STALE_SECONDS.1),
    );
    check::range(
        out,
        "spec.warmRestart.maxStaleSeconds",
        stale,
        bounds,
        Zero::IsAValue,
    );
    check_storage_class(
        out,
        "spec.warmRestart.storageClassName",
        w.storage_class_name.as_deref(),
    );
    if let Some(size) = &w.size {
        check::positive_quantity(out, "spec.warmRestart.size", &size.0);
    }
}

/// A storage class name: empty (the default class) or a DNS subdomain of at most
/// [`STORAGE_CLASS_LENGTH`] characters, as the API server requires.
pub(super) fn check_storage_class(out: &mut Out, field: &str, name: Option<&str>) {
    super::pod::check_subdomain(out, field, name.filter(|n| !n.is_empty()));
}

/// The detail of an extstore path with warm restart.
const EXTSTORE_DETAIL: &str = "extstore (-o ext_path) cannot be used with warmRestart: memcached \
    starts with both but never restores (\"memory restart with extstore not presently supported\")";

/// The cross-field rules: warm restart only with a StatefulSet ([`WORKLOAD_RULE`]), and not
/// with an extstore path in `extraArgs`.
pub(super) fn validate_rules(out: &mut Out, spec: &MemcachedSpec, line: &CommandLine<'_>) {
    let enabled = spec
        .warm_restart
        .as_ref()
        .is_some_and(|w| w.enabled == Some(true));
    if !enabled {
        return;
    }
    if spec.workload.unwrap_or_default() != Workload::StatefulSet {
        out.push(Violation::invalid(
            "spec.warmRestart.enabled",
            "true",
            WORKLOAD_MESSAGE,
        ));
    }
    let path = line
        .extended()
        .find(|(_, sub)| sub.name.trim_start() == "ext_path");
    if let Some((o, _)) = path {
        out.push(Violation::invalid(
            format!("spec.memcached.extraArgs[{}]", o.value_at),
            quoted(line.arg(o.value_at)),
            EXTSTORE_DETAIL,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_size_holds_the_item_memory_and_the_filesystem() {
        assert_eq!(default_size_mib(64), 64 + 4 + 64);
        assert_eq!(default_size_mib(1024), 1024 + 64 + 64);
        assert_eq!(default_size_mib(65536), 65536 + 4096 + 64);
        assert_eq!(default_size_mib(100), 100 + 7 + 64);
    }

    #[test]
    fn defaults_apply_only_when_enabled() {
        let on = WarmRestartSpec {
            enabled: Some(true),
            ..WarmRestartSpec::default()
        };
        let w = WarmRestart::of(Some(&on), 64).expect("enabled");
        assert_eq!((w.size.as_str(), w.max_stale_seconds), ("132Mi", 300));
        assert_eq!(WarmRestart::of(Some(&WarmRestartSpec::default()), 64), None);
        let sized = WarmRestartSpec {
            size: Some(KubeQuantity("1024Mi".into())),
            ..on
        };
        assert_eq!(WarmRestart::of(Some(&sized), 64).expect("on").size, "1Gi");
    }
}
