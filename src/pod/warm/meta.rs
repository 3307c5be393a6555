//! memcached's `<file>.meta`: what a graceful stop saves, and the checks the guard makes before
//! memcached reads it.
//!
//! memcached 1.6.18 calls `abort()` on an empty file, on a first line that is not a tag and on
//! an unknown tag (measured, docs/warm-restart.md), and it reads the file before it would
//! remove it, so every restart aborts again: a crash loop. The guard accepts only what
//! memcached itself wrote: `T<tag>` and
//! `K<key> <value>` lines, each ending in a newline, the tag `main`, the keys memcached needs
//! with values of the right form, and a memory layout equal to the one memcached starts with.

use std::collections::BTreeMap;

use crate::api::command_line::item_size_bytes;
use crate::children::memory::MemorySettings;

/// The longest metadata file accepted (memcached 1.6.18 writes about 400 bytes).
pub const MAX_LEN: usize = 64 * 1024;
/// The only tag memcached 1.6 writes.
const TAG: &str = "main";
/// Keys every metadata file of memcached 1.6.18 has, with whether the value is a number.
const REQUIRED: [(&str, bool); 8] = [
    ("maxbytes", true),
    ("chunk_size", true),
    ("item_size_max", true),
    ("slab_config", false),
    ("use_cas", false),
    ("current_time", true),
    ("stop_time", true),
    ("mmap_oldbase", false),
];
/// Memcached's defaults of the settings the guard compares.
const DEFAULT_MAX_MEMORY_MB: u64 = 64;
const DEFAULT_ITEM_SIZE: u64 = 1 << 20;
const DEFAULT_CHUNK_SIZE: u64 = 48;

/// The saved metadata, checked.
#[derive(Debug, PartialEq, Eq)]
pub struct Meta {
    keys: BTreeMap<String, String>,
    /// When memcached stopped (seconds since the epoch).
    pub stop_time: i64,
    /// The size of the item memory, in bytes.
    pub maxbytes: u64,
}

/// Reads the text of a metadata file; the reason it is not one memcached wrote otherwise.
///
/// # Errors
/// A description of the first problem, for the guard's log and result.
pub fn parse(text: &[u8]) -> Result<Meta, String> {
    if text.is_empty() {
        return Err("empty".to_owned());
    }
    if text.len() > MAX_LEN {
        return Err(format!("{} bytes, more than {MAX_LEN}", text.len()));
    }
    let text = std::str::from_utf8(text).map_err(|_| "not text".to_owned())?;
    let Some(body) = text.strip_suffix('\n') else {
        return Err("truncated (no newline at the end)".to_owned());
    };
    let mut keys = BTreeMap::new();
    for (index, line) in body.split('\n').enumerate() {
        if let Some(tag) = line.strip_prefix('T') {
            if tag != TAG {
                return Err(format!("line {}: unknown tag {tag:?}", index + 1));
            }
        } else if index == 0 {
            return Err("the first line is not a tag".to_owned());
        } else if let Some(kv) = line.strip_prefix('K') {
            let Some((key, value)) = kv.split_once(' ') else {
                return Err(format!("line {}: a key without a value", index + 1));
            };
            keys.insert(key.to_owned(), value.to_owned());
        } else {
            return Err(format!("line {}: neither a tag nor a key", index + 1));
        }
    }
    for (key, numeric) in REQUIRED {
        let Some(value) = keys.get(key) else {
            return Err(format!("{key} is missing"));
        };
        if numeric && value.parse::<i64>().is_err() {
            return Err(format!("{key} is not a number: {value:?}"));
        }
    }
    let number = |key: &str| keys.get(key).and_then(|v| v.parse::<i64>().ok());
    let stop_time = number("stop_time").unwrap_or_default();
    let maxbytes = number("maxbytes")
        .and_then(|v| u64::try_from(v).ok())
        .ok_or("maxbytes is negative")?;
    Ok(Meta {
        keys,
        stop_time,
        maxbytes,
    })
}

impl Meta {
    /// The layout settings memcached started with `layout` would refuse, each as
    /// `<key> <saved> -> <now>`; empty when they match.
    #[must_use]
    pub fn layout_changes(&self, layout: &MemorySettings) -> Vec<String> {
        let mb = layout
            .get("-m")
            .and_then(|m| m.parse::<u64>().ok())
            .unwrap_or(DEFAULT_MAX_MEMORY_MB);
        let item = layout
            .get("-I")
            .and_then(item_size_bytes)
            .unwrap_or(DEFAULT_ITEM_SIZE);
        let chunk = layout
            .get("-n")
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(DEFAULT_CHUNK_SIZE);
        let wanted = [
            ("maxbytes", (mb << 20).to_string()),
            ("item_size_max", item.to_string()),
            ("chunk_size", chunk.to_string()),
            ("use_cas", (!layout.cas_disabled()).to_string()),
        ];
        wanted
            .into_iter()
            .filter_map(|(key, now)| {
                let saved = self.keys.get(key)?;
                (*saved != now).then(|| format!("{key} {saved} -> {now}"))
            })
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A file as memcached 1.6.18 writes it for `-m 64` (copied from a real stop).
    pub(crate) const SAVED: &str = "Tmain\nKslab_config 1.25\nKmaxbytes 67108864\n\
        Kchunk_size 48\nKitem_size_max 1048576\nKslab_chunk_size_max 524288\n\
        Kslab_page_size 1048576\nKuse_cas true\nKslab_reassign true\nKcurrent_time 63\n\
        Kprocess_started 1795656590\nKstop_time 1795656653\nKcurrent_cas 20001\n\
        Koldest_cas 0\nKlogger_gid 1\nKhashpower 16\nKoldest_live 0\n\
        Kmmap_oldbase 0x7f6333c00000\n";

    #[test]
    fn a_file_memcached_wrote_is_read() {
        let meta = parse(SAVED.as_bytes()).expect("valid");
        assert_eq!((meta.stop_time, meta.maxbytes), (1_795_656_653, 64 << 20));
        let args: Vec<String> = ["-m", "64", "-t", "8"].map(str::to_owned).to_vec();
        assert!(meta.layout_changes(&MemorySettings::of(&args)).is_empty());
        let other: Vec<String> = ["-m", "128", "-C"].map(str::to_owned).to_vec();
        assert_eq!(
            meta.layout_changes(&MemorySettings::of(&other)),
            ["maxbytes 67108864 -> 134217728", "use_cas true -> false"]
        );
    }

    #[test]
    fn anything_else_is_refused_with_its_reason() {
        let cut = &SAVED[..SAVED.len() - 10];
        let cases: [(&[u8], &str); 8] = [
            (b"", "empty"),
            (cut.as_bytes(), "truncated"),
            (b"Kmaxbytes 1\n", "the first line is not a tag"),
            (b"Tother\n", "unknown tag"),
            (b"Tmain\nXjunk\n", "line 2: neither a tag nor a key"),
            (b"Tmain\nKmaxbytes\n", "line 2: a key without a value"),
            (b"Tmain\nKmaxbytes 1\n", "chunk_size is missing"),
            (&[0xff, 0xfe, b'\n'], "not text"),
        ];
        for (text, reason) in cases {
            let error = parse(text).expect_err(reason);
            assert!(error.contains(reason), "{reason}: {error}");
        }
        let bad_number = SAVED.replace("Kstop_time 1795656653", "Kstop_time soon");
        assert!(
            parse(bad_number.as_bytes())
                .expect_err("nan")
                .contains("stop_time")
        );
    }
}
