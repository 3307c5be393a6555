//! memcached's memory layout, read from its command line: the settings a warm restart must keep.
//!
//! memcached 1.6.18 restores its items only when these match the ones saved in `<file>.meta`
//! (measured one by one, docs/warm-restart.md): `-m` (`maxbytes`), `-I` (`item_size_max`),
//! `-n` (`chunk_size`), `-f` or `-o slab_sizes` (`slab_config`), `-C` (`use_cas`),
//! `-o slab_chunk_max` (`slab_chunk_size_max`) and `-o no_slab_reassign` (`slab_reassign`).
//! Threads, connections, listeners, verbosity and the refused commands do not matter.

use std::collections::BTreeMap;

/// The layout settings found on a command line, by the flag that sets them (the last one
/// wins, as in memcached); a setting left at its default is absent. Ordered by its settings,
/// so that a list of layouts has one sorted form.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Layout(BTreeMap<&'static str, String>);

/// Short flags with a value, and their long names.
const VALUED: [(&str, &str); 4] = [
    ("-m", "--memory-limit"),
    ("-I", "--max-item-size"),
    ("-n", "--slab-min-size"),
    ("-f", "--slab-growth-factor"),
];
/// `-o` settings that change the layout.
const EXTENDED: [&str; 4] = [
    "slab_chunk_max",
    "slab_sizes",
    "no_slab_reassign",
    "slab_reassign",
];

impl Layout {
    /// The layout of memcached started with `args`.
    #[must_use]
    pub fn of(args: &[String]) -> Self {
        let mut out = BTreeMap::new();
        let mut it = args.iter().map(String::as_str);
        while let Some(arg) = it.next() {
            if arg == "-C" || arg == "--disable-cas" {
                out.insert("-C", String::new());
                continue;
            }
            if let Some(options) = extended(arg, &mut it) {
                for option in options.split(',') {
                    let key = option.split_once('=').map_or(option, |(k, _)| k);
                    if let Some(known) = EXTENDED.iter().find(|k| **k == key) {
                        out.insert(known, option.to_owned());
                    }
                }
                continue;
            }
            for (short, long) in VALUED {
                if let Some(value) = valued(arg, short, long, &mut it) {
                    out.insert(short, value.to_owned());
                }
            }
        }
        Self(out)
    }

    /// The layout as memcached arguments, by flag (`-C`, `-I 1m`, `-m 64`, `-o slab_sizes=...`):
    /// [`Layout::of`] reads them back to the same layout.
    #[must_use]
    pub fn args(&self) -> Vec<&str> {
        let mut out = Vec::with_capacity(2 * self.0.len());
        for (key, value) in &self.0 {
            match *key {
                "-C" => out.push("-C"),
                flag if flag.starts_with('-') => out.extend([flag, value.as_str()]),
                _ => out.extend(["-o", value.as_str()]),
            }
        }
        out
    }

    /// The value of a short flag (`-m`, `-I`, `-n`, `-f`), when set.
    #[must_use]
    pub fn get(&self, flag: &str) -> Option<&str> {
        self.0.get(flag).map(String::as_str)
    }

    /// Whether `-C` (no CAS) is set.
    #[must_use]
    pub fn cas_disabled(&self) -> bool {
        self.0.contains_key("-C")
    }

    /// The settings that differ from `new`, each as `<flag> <old> -> <new>` (`default` for an
    /// unset one); empty when a restart keeps the items.
    #[must_use]
    pub fn changes(&self, new: &Self) -> Vec<String> {
        let keys: std::collections::BTreeSet<&&str> = self.0.keys().chain(new.0.keys()).collect();
        keys.into_iter()
            .filter(|k| self.0.get(**k) != new.0.get(**k))
            .map(|k| {
                let shown = |l: &Self| match l.0.get(*k) {
                    None => "default".to_owned(),
                    Some(v) if v.is_empty() => "set".to_owned(),
                    Some(v) => v.clone(),
                };
                format!("{k} {} -> {}", shown(self), shown(new))
            })
            .collect()
    }
}

fn extended<'a>(arg: &'a str, rest: &mut impl Iterator<Item = &'a str>) -> Option<&'a str> {
    match arg {
        "-o" | "--extended" => rest.next(),
        _ => arg
            .strip_prefix("--extended=")
            .or_else(|| arg.strip_prefix("-o").filter(|v| !v.is_empty())),
    }
}

fn valued<'a>(
    arg: &'a str,
    short: &str,
    long: &str,
    rest: &mut impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    if arg == short || arg == long {
        return rest.next();
    }
    if let Some(value) = arg.strip_prefix(long).and_then(|v| v.strip_prefix('=')) {
        return Some(value);
    }
    arg.strip_prefix(short)
        .filter(|v| !v.is_empty() && !arg.starts_with("--"))
}

/// `-I`'s value in bytes (`1m`, `512k`, `2097152`), as memcached reads it.
#[must_use]
pub fn item_size_bytes(text: &str) -> Option<u64> {
    let (digits, unit) = match text.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1024),
        None => match text.strip_suffix(['m', 'M']) {
            Some(d) => (d, 1024 * 1024),
            None => (text, 1),
        },
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(args: &str) -> Layout {
        let args: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
        Layout::of(&args)
    }

    #[test]
    fn only_layout_settings_count() {
        let base = layout("-m 64 -c 1024 -t 4 -I 1m -X -W");
        assert!(
            base.changes(&layout("-m 64 -c 10 -t 8 -I 1m -v -o no_lru_crawler"))
                .is_empty()
        );
        assert_eq!(base.changes(&layout("-m 128 -I 1m")), ["-m 64 -> 128"]);
        assert_eq!(
            base.changes(&layout(
                "-m64 -I 2m -C -o slab_chunk_max=262144,no_lru_crawler"
            )),
            [
                "-C default -> set",
                "-I 1m -> 2m",
                "slab_chunk_max default -> slab_chunk_max=262144"
            ]
        );
        assert_eq!(
            layout("--memory-limit=32 -f 1.5 --extended=slab_sizes=100-200")
                .changes(&layout("-m 32")),
            [
                "-f 1.5 -> default",
                "slab_sizes slab_sizes=100-200 -> default"
            ]
        );
    }

    #[test]
    fn a_layout_reads_back_from_its_arguments() {
        let all = layout(
            "-m 64 -I 2m -n 48 -f 1.5 -C -o slab_chunk_max=262144,no_lru_crawler \
             -o slab_sizes=100-200,no_slab_reassign -t 4",
        );
        assert_eq!(
            all.args(),
            [
                "-C",
                "-I",
                "2m",
                "-f",
                "1.5",
                "-m",
                "64",
                "-n",
                "48",
                "-o",
                "no_slab_reassign",
                "-o",
                "slab_chunk_max=262144",
                "-o",
                "slab_sizes=100-200"
            ]
        );
        for l in [all, layout(""), layout("-m -C"), layout("--memory-limit=")] {
            let args: Vec<String> = l.args().into_iter().map(str::to_owned).collect();
            assert_eq!(Layout::of(&args), l);
        }
    }

    #[test]
    fn the_last_flag_wins_and_item_sizes_read_like_memcached() {
        assert_eq!(layout("-m 64 -m 128").get("-m"), Some("128"));
        assert_eq!(item_size_bytes("1m"), Some(1 << 20));
        assert_eq!(item_size_bytes("512k"), Some(512 << 10));
        assert_eq!(item_size_bytes("2097152"), Some(2 << 20));
        assert_eq!(item_size_bytes("x"), None);
    }
}
