//! The rules of `spec.extstore`: its fields' bounds, and the cross-field rules an enabled
//! extstore needs, each one memcached itself has (docs/behaviour.md, "Extstore").

use super::super::check::{self, Out, Violation, Zero, quoted};
use super::super::command_line::{CommandLine, atoi, item_size_bytes};
use super::super::warm_restart::check_storage_class;
use super::super::{MemcachedSpec, memcached};
use super::{
    ALIGNMENT_MB, DEFAULT_ITEM_SIZE_BYTES, DEFAULT_PAGE_SIZE_MB, DEFAULT_WRITE_BUFFER_SIZE_MB,
    ExtstoreSpec, ExtstoreVolume, ITEM_SIZE_BYTES, MAX_FRAG, MAX_PAGES, MIB, MIN_PAGES,
    PAGE_SIZE_MB, RECACHE_RATE, SECONDS, SIZE_MESSAGE, THREADS, UNDER_PAGES, WARM_RESTART_DETAIL,
    WRITE_BUFFER_SIZE_MB, bytes,
};

fn wide((min, max): (i32, i32)) -> (i64, i64) {
    (i64::from(min), i64::from(max))
}

/// The field rules of `spec.extstore`.
pub(in crate::api) fn validate(out: &mut Out, x: &ExtstoreSpec) {
    macro_rules! field {
        ($name:literal) => {
            concat!("spec.extstore.", $name)
        };
    }
    let int = |v: Option<i32>| v.map(i64::from);
    let value = Zero::IsAValue;
    for (name, v, bounds) in [
        (field!("pageSizeMB"), x.page_size_mb, PAGE_SIZE_MB),
        (
            field!("writeBufferSizeMB"),
            x.write_buffer_size_mb,
            WRITE_BUFFER_SIZE_MB,
        ),
    ] {
        validate_aligned(out, name, v, bounds);
    }
    check::range(out, field!("threads"), int(x.threads), wide(THREADS), value);
    let item = int(x.item_size_bytes);
    check::range(
        out,
        field!("itemSizeBytes"),
        item,
        wide(ITEM_SIZE_BYTES),
        value,
    );
    let age = int(x.item_age_seconds);
    check::range(out, field!("itemAgeSeconds"), age, wide(SECONDS), value);
    let low = int(x.low_ttl_seconds);
    check::range(out, field!("lowTtlSeconds"), low, wide(SECONDS), value);
    let rate = int(x.recache_rate);
    check::range(out, field!("recacheRate"), rate, wide(RECACHE_RATE), value);
    let compact = int(x.compact_under_pages);
    let under = wide(UNDER_PAGES);
    check::range(out, field!("compactUnderPages"), compact, under, value);
    let drop = int(x.drop_under_pages);
    check::range(out, field!("dropUnderPages"), drop, under, value);
    if let Some(f) = x
        .max_frag
        .filter(|f| !(MAX_FRAG.0..=MAX_FRAG.1).contains(f))
    {
        let detail = format!("must be between {} and {}", MAX_FRAG.0, MAX_FRAG.1);
        out.push(Violation::invalid(field!("maxFrag"), f, detail));
    }
    check_storage_class(
        out,
        field!("storageClassName"),
        x.storage_class_name.as_deref(),
    );
    if let Some(size) = &x.size {
        check::positive_quantity(out, "spec.extstore.size", &size.0);
    }
}

/// A page or write-buffer size: within `bounds` and a multiple of [`ALIGNMENT_MB`].
fn validate_aligned(out: &mut Out, name: &str, v: Option<i32>, bounds: (i32, i32)) {
    check::range(out, name, v.map(i64::from), wide(bounds), Zero::IsAValue);
    if let Some(v) = v.filter(|v| v % ALIGNMENT_MB != 0) {
        out.push(Violation::invalid(
            name,
            v,
            format!("must be a multiple of {ALIGNMENT_MB}"),
        ));
    }
}

/// The cross-field rules of an enabled `spec.extstore`, each one memcached itself needs.
pub(in crate::api) fn validate_rules(
    out: &mut Out,
    spec: &MemcachedSpec,
    server: &memcached::Server<'_>,
    line: &CommandLine<'_>,
) {
    let Some(x) = spec.extstore.as_ref().filter(|x| x.enabled == Some(true)) else {
        return;
    };
    if x.size.is_none() {
        out.push(Violation::required("spec.extstore.size", SIZE_MESSAGE));
    }
    if x.storage_class_name.is_some() && x.volume == Some(ExtstoreVolume::EmptyDir) {
        out.push(Violation::invalid(
            "spec.extstore.storageClassName",
            quoted(x.storage_class_name.as_deref().unwrap_or_default()),
            "a storage class names an ephemeral volume's class: not with volume EmptyDir",
        ));
    }
    if spec
        .warm_restart
        .as_ref()
        .is_some_and(|w| w.enabled == Some(true))
    {
        out.push(Violation::invalid(
            "spec.extstore.enabled",
            "true",
            WARM_RESTART_DETAIL,
        ));
    }
    let field = |at: usize| format!("spec.memcached.extraArgs[{at}]");
    for o in line.all('U') {
        let port = o.value.unwrap_or_default();
        if atoi(port) != Some(0) {
            out.push(Violation::invalid(
                field(o.at),
                quoted(line.arg(o.at)),
                format!(
                    "UDP port {port} with extstore: memcached refuses UDP with extstore enabled \
                     (\"Cannot use UDP with extstore enabled\")"
                ),
            ));
        }
    }
    let mut options = line
        .extended()
        .filter(|(_, sub)| sub.name.trim_start().starts_with("ext_"))
        .map(|(o, _)| o.value_at)
        .collect::<Vec<_>>();
    options.dedup();
    for at in options {
        out.push(Violation::invalid(
            field(at),
            quoted(line.arg(at)),
            "extstore options belong in spec.extstore when it is enabled: memcached \
             would read both, the last one winning",
        ));
    }
    validate_buffers(out, x, server);
    validate_pages(out, x);
}

/// The write buffer holds the largest item and divides a page; the item size is below the
/// largest item.
fn validate_buffers(out: &mut Out, x: &ExtstoreSpec, server: &memcached::Server<'_>) {
    let page = x.page_size_mb.unwrap_or(DEFAULT_PAGE_SIZE_MB);
    let wbuf = x
        .write_buffer_size_mb
        .unwrap_or(DEFAULT_WRITE_BUFFER_SIZE_MB);
    if page > 0 && wbuf > 0 && page % wbuf != 0 {
        out.push(Violation::invalid(
            "spec.extstore.writeBufferSizeMB",
            wbuf,
            format!(
                "must divide pageSizeMB ({page}): memcached fills a page with whole write buffers"
            ),
        ));
    }
    let item_max = item_size_bytes(server.max_item_size);
    if let Some(item_max) = item_max {
        let wbuf_bytes = u64::from(wbuf.unsigned_abs()) << 20;
        if wbuf > 0 && item_max > wbuf_bytes {
            out.push(Violation::invalid(
                "spec.extstore.writeBufferSizeMB",
                wbuf,
                format!(
                    "must hold the largest item: maxItemSize {} is {item_max} bytes, a write \
                     buffer of {wbuf} MiB {wbuf_bytes} (memcached refuses -I larger than \
                     ext_wbuf_size)",
                    server.max_item_size
                ),
            ));
        }
        let item = x.item_size_bytes.unwrap_or(DEFAULT_ITEM_SIZE_BYTES);
        if u64::from(item.unsigned_abs()) >= item_max {
            out.push(Violation::invalid(
                "spec.extstore.itemSizeBytes",
                item,
                format!(
                    "must be below maxItemSize {} ({item_max} bytes): only items larger than \
                     it go to extstore, so none would",
                    server.max_item_size
                ),
            ));
        }
    }
}

/// The file holds from [`MIN_PAGES`] to [`MAX_PAGES`] pages, and the page thresholds are
/// within it.
fn validate_pages(out: &mut Out, x: &ExtstoreSpec) {
    let page = x.page_size_mb.unwrap_or(DEFAULT_PAGE_SIZE_MB);
    let Some(size) = x.size.as_ref().and_then(bytes) else {
        return;
    };
    if page <= 0 {
        return;
    }
    let page_bytes = u128::from(page.unsigned_abs()) * MIB;
    let pages = size / page_bytes;
    let shown = || quoted(&x.size.as_ref().map(|q| q.0.clone()).unwrap_or_default());
    if pages < u128::from(MIN_PAGES.unsigned_abs()) {
        let min = i64::from(page) * MIN_PAGES;
        out.push(Violation::invalid(
            "spec.extstore.size",
            shown(),
            format!(
                "must be at least {min}Mi ({MIN_PAGES} pages of pageSizeMB {page}): memcached \
                 never writes its first page and keeps one open per page bucket, so a smaller \
                 file holds next to nothing"
            ),
        ));
    } else if pages > u128::from(MAX_PAGES.unsigned_abs()) {
        out.push(Violation::invalid(
            "spec.extstore.size",
            shown(),
            format!(
                "must be at most {MAX_PAGES} pages of pageSizeMB {page}: memcached refuses \
                 65535 pages or more (a larger pageSizeMB makes fewer pages)"
            ),
        ));
    }
    let pages = i64::try_from(pages).unwrap_or(i64::MAX);
    for (name, value) in [
        ("spec.extstore.compactUnderPages", x.compact_under_pages),
        ("spec.extstore.dropUnderPages", x.drop_under_pages),
    ] {
        if let Some(v) = value.filter(|v| i64::from(*v) > pages) {
            out.push(Violation::invalid(
                name,
                v,
                format!("must be at most the file's {pages} pages"),
            ));
        }
    }
}
