//! `spec.extstore`: memcached's external storage. Keys and item headers stay in memory
//! (`maxMemoryMB`), values of cold items move to a file on a volume of each pod
//! (`-o ext_path=FILE:SIZE`).
//!
//! Every bound here is memcached 1.6's own (its `storage.c` and `extstore.c`) or one measured
//! with it; docs/behaviour.md, "Extstore", gives the measurements.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::quantity::Quantity;
use super::warm_restart::{
    SIZE_FIXED_MIB, SIZE_MIB_PER_EXTRA_MIB, STORAGE_CLASS_LENGTH, STORAGE_CLASS_PATTERN,
};

const MIB: u128 = 1 << 20;

/// Default `pageSizeMB` (memcached's `ext_page_size`).
pub const DEFAULT_PAGE_SIZE_MB: i32 = 64;
/// Bounds of `pageSizeMB`: memcached keeps the page size in bytes in 32 bits.
pub const PAGE_SIZE_MB: (i32, i32) = (2, 2048);
/// Default `writeBufferSizeMB` (memcached's `ext_wbuf_size`).
pub const DEFAULT_WRITE_BUFFER_SIZE_MB: i32 = 4;
/// Bounds of `writeBufferSizeMB`.
pub const WRITE_BUFFER_SIZE_MB: (i32, i32) = (2, 2048);
/// Page and write-buffer sizes are multiples of this many MiB (memcached: "page_size and
/// wbuf_size must be divisible by 1024*1024*2").
pub const ALIGNMENT_MB: i32 = 2;
/// Default `threads` (memcached's `ext_threads`).
pub const DEFAULT_THREADS: i32 = 1;
/// Bounds of `threads`.
pub const THREADS: (i32, i32) = (1, 64);
/// Default `itemSizeBytes` (memcached's `ext_item_size`).
pub const DEFAULT_ITEM_SIZE_BYTES: i32 = 512;
/// Bounds of `itemSizeBytes` (`maxItemSize` bounds it further).
pub const ITEM_SIZE_BYTES: (i32, i32) = (1, 1 << 30);
/// Bounds of the seconds of `itemAgeSeconds` and `lowTtlSeconds`.
pub const SECONDS: (i32, i32) = (0, i32::MAX);
/// Default `recacheRate` (memcached's `ext_recache_rate`).
pub const DEFAULT_RECACHE_RATE: i32 = 2000;
/// Bounds of `recacheRate` (0: never copy an item back to memory).
pub const RECACHE_RATE: (i32, i32) = (0, i32::MAX);
/// Default `maxFrag` (memcached's `ext_max_frag`).
pub const DEFAULT_MAX_FRAG: f64 = 0.8;
/// Bounds of `maxFrag`.
pub const MAX_FRAG: (f64, f64) = (0.0, 1.0);
/// The fewest pages a useful file has. memcached never writes to its first page, keeps a page
/// open per page bucket and evicts a whole page when it needs one: with two or three pages of a
/// 64 MiB default it served no more items than without a file at all (measured with memcached
/// 1.6.18, docs/behaviour.md), with four it kept items on flash.
pub const MIN_PAGES: i64 = 4;
/// The most pages memcached accepts ("page_count must total to < 65536").
pub const MAX_PAGES: i64 = 65_534;
/// The most `compactUnderPages` and `dropUnderPages` can say.
pub const UNDER_PAGES: (i32, i32) = (1, 65_534);
/// Where the volume is mounted in the memcached container.
pub const MOUNT_PATH: &str = "/data";
/// The extstore file memcached writes.
pub const FILE: &str = "/data/extstore";
/// Write buffers memcached allocates: one per page bucket (4), and the compaction thread's
/// read-back buffer.
pub const WRITE_BUFFERS: i64 = 5;
/// Pages whose bookkeeping takes one MiB of memory (about 128 bytes a page).
pub const PAGES_PER_MIB: i64 = 8192;
/// Memory of extstore that does not grow with its settings, in MiB (the IO and compaction
/// threads).
pub const MEMORY_FIXED_MIB: i64 = 1;

/// The CEL rule (on the block): an enabled extstore names its size.
pub const SIZE_RULE: &str = "!has(self.enabled) || !self.enabled || has(self.size)";
/// The message of [`SIZE_RULE`].
pub const SIZE_MESSAGE: &str = "extstore.size is required when extstore.enabled is true";

/// The volume of the extstore file: `Ephemeral` (the default), a PersistentVolumeClaim per pod
/// of `storageClassName`, created and deleted with the pod; `EmptyDir`, the node's disk with the
/// volume's size as `sizeLimit`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ExtstoreVolume {
    /// A generic ephemeral volume per pod: a PersistentVolumeClaim of `storageClassName`
    /// created with the pod and deleted with it.
    #[default]
    Ephemeral,
    /// An `emptyDir` on the node's disk, bounded by a `sizeLimit` (the kubelet evicts a pod
    /// that writes more).
    EmptyDir,
}

/// memcached's external storage: values of cold items on a file per pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": SIZE_RULE, "message": SIZE_MESSAGE, "fieldPath": ".size", "reason": "FieldValueRequired"}
]))]
pub struct ExtstoreSpec {
    /// Keep the values of cold items on a file of each pod's own volume (memcached
    /// `-o ext_path`); keys and item headers stay in `maxMemoryMB`. Not with `warmRestart`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enabled: Option<bool>,

    /// Size of the extstore file (required when enabled), at least 4 pages (`4 * pageSizeMB`
    /// MiB, 256Mi by default) and at most 65534 pages. The volume is larger by
    /// `ceil(size / 16) + 64Mi` for the filesystem's own blocks, so memcached never runs out
    /// of space within its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<KubeQuantity>,

    /// StorageClass of each pod's ephemeral volume (a DNS subdomain); the cluster's default
    /// class when unset. Not with `volume: EmptyDir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = STORAGE_CLASS_LENGTH), regex(pattern = STORAGE_CLASS_PATTERN))]
    pub storage_class_name: Option<String>,

    /// `Ephemeral`: a PersistentVolumeClaim per pod, created and deleted with it. `EmptyDir`:
    /// the node's disk, with the volume's size as `sizeLimit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Ephemeral"))]
    pub volume: Option<ExtstoreVolume>,

    /// Size of a page of the file in MiB (`ext_page_size`): memcached allocates, compacts and
    /// evicts the file a page at a time. A multiple of 2.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "pageSizeMB"
    )]
    #[schemars(
        range(min = PAGE_SIZE_MB.0, max = PAGE_SIZE_MB.1),
        extend("default" = DEFAULT_PAGE_SIZE_MB, "multipleOf" = ALIGNMENT_MB)
    )]
    pub page_size_mb: Option<i32>,

    /// Size of a write buffer in MiB (`ext_wbuf_size`): a multiple of 2 that divides
    /// `pageSizeMB` and holds the largest item (`maxItemSize`). memcached keeps five of them in
    /// memory.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "writeBufferSizeMB"
    )]
    #[schemars(
        range(min = WRITE_BUFFER_SIZE_MB.0, max = WRITE_BUFFER_SIZE_MB.1),
        extend("default" = DEFAULT_WRITE_BUFFER_SIZE_MB, "multipleOf" = ALIGNMENT_MB)
    )]
    pub write_buffer_size_mb: Option<i32>,

    /// Threads reading and writing the file (`ext_threads`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = THREADS.0, max = THREADS.1), extend("default" = DEFAULT_THREADS))]
    pub threads: Option<i32>,

    /// Only items larger than this many bytes go to the file (`ext_item_size`); below
    /// `maxItemSize`, or no item would ever qualify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = ITEM_SIZE_BYTES.0, max = ITEM_SIZE_BYTES.1),
        extend("default" = DEFAULT_ITEM_SIZE_BYTES)
    )]
    pub item_size_bytes: Option<i32>,

    /// Only items not read for at least this many seconds go to the file (`ext_item_age`);
    /// unset: no age limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = SECONDS.0, max = SECONDS.1))]
    pub item_age_seconds: Option<i32>,

    /// Items with a TTL under this many seconds share pages of their own, freed as they
    /// expire (`ext_low_ttl`); 0: no such pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = SECONDS.0, max = SECONDS.1), extend("default" = 0))]
    pub low_ttl_seconds: Option<i32>,

    /// An item read from the file is copied back to memory once every this many reads
    /// (`ext_recache_rate`); 0: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = RECACHE_RATE.0, max = RECACHE_RATE.1),
        extend("default" = DEFAULT_RECACHE_RATE)
    )]
    pub recache_rate: Option<i32>,

    /// Compact pages when fewer than this many pages are free (`ext_compact_under`); at most
    /// the file's pages. Default: a quarter of the file's pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = UNDER_PAGES.0, max = UNDER_PAGES.1))]
    pub compact_under_pages: Option<i32>,

    /// Drop cold items instead of compacting them when fewer than this many pages are free
    /// (`ext_drop_under`); at most the file's pages. Default: a quarter of the file's pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = UNDER_PAGES.0, max = UNDER_PAGES.1))]
    pub drop_under_pages: Option<i32>,

    /// A page whose live data is under this fraction of it is compacted (`ext_max_frag`),
    /// from 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = MAX_FRAG.0, max = MAX_FRAG.1), extend("default" = DEFAULT_MAX_FRAG))]
    pub max_frag: Option<f64>,
}

/// An enabled extstore with every default applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Extstore<'a> {
    /// The file's size in MiB (the size rounded down to whole MiB).
    pub size_mib: i64,
    /// The volume: `size_mib` plus the filesystem's margin.
    pub volume_mib: i64,
    /// The kind of volume.
    pub volume: ExtstoreVolume,
    /// StorageClass of an ephemeral volume, when named.
    pub storage_class_name: Option<&'a str>,
    /// `ext_page_size` in MiB.
    pub page_size_mb: i32,
    /// `ext_wbuf_size` in MiB.
    pub write_buffer_size_mb: i32,
    /// The spec, for the options rendered only when set.
    pub spec: &'a ExtstoreSpec,
}

/// The volume holding a file of `size_mib`: `size + ceil(size / 16) + 64` MiB, the margin of
/// warm restart's volume (a filesystem's reserved blocks, inode tables and journal).
#[must_use]
pub fn volume_mib(size_mib: i64) -> i64 {
    let size = size_mib.max(0);
    size + (size + SIZE_MIB_PER_EXTRA_MIB - 1) / SIZE_MIB_PER_EXTRA_MIB + SIZE_FIXED_MIB
}

/// The bytes of `size`, when it is a well-formed positive quantity.
fn bytes(size: &KubeQuantity) -> Option<u128> {
    Quantity::parse(&size.0)
        .ok()
        .filter(|q| !q.is_negative())
        .and_then(|q| q.ceil())
}

impl<'a> Extstore<'a> {
    /// Resolves the defaults of an enabled `spec.extstore`; `None` when it is off or has no
    /// usable size (validation reports that).
    #[must_use]
    pub fn of(spec: Option<&'a ExtstoreSpec>) -> Option<Self> {
        let spec = spec.filter(|x| x.enabled == Some(true))?;
        let size_mib = i64::try_from(bytes(spec.size.as_ref()?)? / MIB).ok()?;
        Some(Self {
            size_mib,
            volume_mib: volume_mib(size_mib),
            volume: spec.volume.unwrap_or_default(),
            storage_class_name: spec.storage_class_name.as_deref().filter(|s| !s.is_empty()),
            page_size_mb: spec.page_size_mb.unwrap_or(DEFAULT_PAGE_SIZE_MB),
            write_buffer_size_mb: spec
                .write_buffer_size_mb
                .unwrap_or(DEFAULT_WRITE_BUFFER_SIZE_MB),
            spec,
        })
    }

    /// The pages of the file (memcached rounds the size down to whole pages).
    #[must_use]
    pub fn pages(&self) -> i64 {
        self.size_mib / i64::from(self.page_size_mb.max(1))
    }

    /// memcached's `-o` value: the tuning options set to other than memcached's default (so the
    /// defaults the API server stores change no argument), then the path (memcached reads
    /// `ext_page_size` only before `ext_path`).
    #[must_use]
    pub fn option(&self) -> String {
        let s = self.spec;
        let mut options = Vec::new();
        let mut push = |name: &str, value: Option<i32>, default: Option<i32>| {
            if let Some(v) = value.filter(|v| Some(*v) != default) {
                options.push(format!("{name}={v}"));
            }
        };
        push("ext_page_size", s.page_size_mb, Some(DEFAULT_PAGE_SIZE_MB));
        let wbuf = Some(DEFAULT_WRITE_BUFFER_SIZE_MB);
        push("ext_wbuf_size", s.write_buffer_size_mb, wbuf);
        push("ext_threads", s.threads, Some(DEFAULT_THREADS));
        push(
            "ext_item_size",
            s.item_size_bytes,
            Some(DEFAULT_ITEM_SIZE_BYTES),
        );
        push("ext_item_age", s.item_age_seconds, None);
        push("ext_low_ttl", s.low_ttl_seconds, Some(0));
        push(
            "ext_recache_rate",
            s.recache_rate,
            Some(DEFAULT_RECACHE_RATE),
        );
        push("ext_compact_under", s.compact_under_pages, None);
        push("ext_drop_under", s.drop_under_pages, None);
        if let Some(f) = s
            .max_frag
            .filter(|f| (f - DEFAULT_MAX_FRAG).abs() > f64::EPSILON)
        {
            options.push(format!("ext_max_frag={}", exact(f)));
        }
        options.push(format!("ext_path={FILE}:{}m", self.size_mib));
        options.join(",")
    }

    /// What extstore adds to memcached's memory beyond `maxMemoryMB`, in MiB: five write
    /// buffers, the pages' bookkeeping and the threads.
    #[must_use]
    pub fn memory_mib(&self) -> i64 {
        WRITE_BUFFERS * i64::from(self.write_buffer_size_mb)
            + (self.pages() + PAGES_PER_MIB - 1) / PAGES_PER_MIB
            + MEMORY_FIXED_MIB
    }
}

/// `f` with at least two decimals and as many as it takes to be read back exactly (`0.50`,
/// `0.001`): memcached reads it with `atof`.
fn exact(f: f64) -> String {
    let two = format!("{f:.2}");
    if two.parse::<f64>() == Ok(f) {
        two
    } else {
        f.to_string()
    }
}

/// CEL rule (on the spec): extstore and warm restart are not both enabled.
pub const WARM_RESTART_RULE: &str = "!has(self.extstore) || !has(self.extstore.enabled) || \
    !self.extstore.enabled || !has(self.warmRestart) || !has(self.warmRestart.enabled) || \
    !self.warmRestart.enabled";

/// The detail of extstore with warm restart.
pub const WARM_RESTART_DETAIL: &str = "extstore cannot be used with warmRestart: memcached \
    starts with both but never restores (\"memory restart with extstore not presently \
    supported\")";

mod rules;

pub(super) use rules::{validate, validate_rules};

#[cfg(test)]
mod tests;
