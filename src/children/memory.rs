//! memcached's memory and item settings, read from its command line: what a warm restart must keep.
//!
//! memcached 1.6.18 restores its items only when these match the ones saved in `<file>.meta`
//! (measured one by one, docs/warm-restart.md): `-m` (`maxbytes`), `-I` (`item_size_max`),
//! `-n` (`chunk_size`), `-f` or `-o slab_sizes` (`slab_config`), `-C` (`use_cas`),
//! `-o slab_chunk_max` (`slab_chunk_size_max`) and `-o no_slab_reassign` (`slab_reassign`).
//! Threads, connections, listeners, verbosity and the refused commands do not matter.

use std::collections::BTreeMap;

use crate::api::command_line;

/// The memory and item settings found on a command line, by the flag that sets them (the last one
/// wins, as in memcached); a setting left at its default is absent. Ordered by its settings,
/// so that a list of them has one sorted form.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct MemorySettings(BTreeMap<&'static str, String>);

/// Short flags with a value that change the memory settings, by flag character.
const VALUED: [(char, &str); 4] = [('m', "-m"), ('I', "-I"), ('n', "-n"), ('f', "-f")];
/// `-o` settings that change the memory settings.
const EXTENDED: [&str; 4] = [
    "slab_chunk_max",
    "slab_sizes",
    "no_slab_reassign",
    "slab_reassign",
];

impl MemorySettings {
    /// The memory settings of memcached started with `args`.
    #[must_use]
    pub fn of(args: &[String]) -> Self {
        let mut out = BTreeMap::new();
        for option in command_line::read(args).options {
            let value = option.value.unwrap_or_default();
            match option.flag {
                'C' => {
                    out.insert("-C", String::new());
                }
                'o' => {
                    for sub in command_line::sub_options(value) {
                        if let Some(known) = EXTENDED.iter().find(|k| **k == sub.name) {
                            out.insert(known, sub.text.to_owned());
                        }
                    }
                }
                flag => {
                    if let Some((_, short)) = VALUED.iter().find(|(f, _)| *f == flag) {
                        out.insert(short, value.to_owned());
                    }
                }
            }
        }
        Self(out)
    }

    /// The settings as memcached arguments, by flag (`-C`, `-I 1m`, `-m 64`, `-o slab_sizes=...`):
    /// [`MemorySettings::of`] reads them back to the same settings.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(args: &str) -> MemorySettings {
        let args: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
        MemorySettings::of(&args)
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
            assert_eq!(MemorySettings::of(&args), l);
        }
    }

    #[test]
    fn the_last_flag_wins() {
        assert_eq!(layout("-m 64 -m 128").get("-m"), Some("128"));
    }

    #[test]
    fn clustered_and_attached_flags_are_read_as_memcached_reads_them() {
        let separate = layout("-v -C -I 2m -o slab_chunk_max=262144 -m 128");
        for spelling in [
            "-vCI2m -oslab_chunk_max=262144 -m128",
            "-vC --max-item-size=2m --extended slab_chunk_max=262144 --memory-limit 128",
            "-CvI 2m -vo slab_chunk_max=262144 -m 128 -- -m 64",
        ] {
            assert_eq!(layout(spelling), separate, "{spelling}");
        }
        // `-m` takes the next argument whatever it is: `-C` there is a value, not a flag.
        assert!(!layout("-m -C").cas_disabled());
    }
}
