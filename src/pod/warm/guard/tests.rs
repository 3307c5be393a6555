//! The guard against real files in a scratch directory.

use super::*;
use crate::pod::warm::meta::tests::SAVED;

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "memcached-hook-guard-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("scratch directory");
        Self(path)
    }

    /// Guard arguments for `-m 64`, with a memory file of `data` bytes and `meta` as metadata.
    fn args(&self, data: Option<u64>, meta: Option<&[u8]>) -> GuardArgs {
        let file = self.0.join("memory");
        if let Some(len) = data {
            std::fs::File::create(&file)
                .and_then(|f| f.set_len(len))
                .expect("memory file");
        }
        if let Some(text) = meta {
            std::fs::write(meta_path(&file), text).expect("metadata");
        }
        GuardArgs {
            file,
            max_stale_seconds: 300,
            copy_binary_to: None,
            result_file: self.0.join("result"),
            memcached_args: ["-m", "64", "-I", "1m"].map(str::to_owned).to_vec(),
        }
    }

    fn result(&self) -> String {
        std::fs::read_to_string(self.0.join("result")).expect("result written")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// [`SAVED`] as if memcached had stopped `ago` seconds before now.
fn saved(ago: i64) -> String {
    SAVED.replace(
        "Kstop_time 1795656653",
        &format!("Kstop_time {}", now() - ago),
    )
}

#[test]
fn a_recent_graceful_stop_is_restored_and_the_metadata_kept() {
    let dir = Dir::new("restore");
    let args = dir.args(Some(64 << 20), Some(saved(10).as_bytes()));
    let line = run(&args);
    assert!(line.starts_with("restore: items saved 1"), "{line}");
    assert_eq!(dir.result(), format!("{line}\n"));
    assert!(meta_path(&args.file).exists());
}

#[test]
fn bad_metadata_is_removed_and_the_start_is_cold() {
    let cut = saved(10);
    let cases: [(&str, Option<u64>, Vec<u8>, &str); 6] = [
        (
            "empty",
            Some(64 << 20),
            Vec::new(),
            "cold: metadata invalid: empty",
        ),
        (
            "truncated",
            Some(64 << 20),
            cut.as_bytes()[..cut.len() - 7].to_vec(),
            "cold: metadata invalid: truncated (no newline at the end)",
        ),
        (
            "garbage",
            Some(64 << 20),
            b"\xff\xfegarbage\n".to_vec(),
            "cold: metadata invalid: not text",
        ),
        (
            "stale",
            Some(64 << 20),
            saved(301).into_bytes(),
            "cold: stale: items saved 301 s ago, the bound is 300 s",
        ),
        (
            "short",
            Some(1 << 20),
            saved(10).into_bytes(),
            "cold: 1048576 bytes of memory file, the metadata says 67108864 bytes",
        ),
        (
            "layout",
            Some(64 << 20),
            saved(10)
                .replace("Kitem_size_max 1048576", "Kitem_size_max 2097152")
                .into_bytes(),
            "cold: memory layout changed: item_size_max 2097152 -> 1048576",
        ),
    ];
    for (name, data, meta, want) in cases {
        let dir = Dir::new(name);
        let args = dir.args(data, Some(&meta));
        assert_eq!(run(&args), want, "{name}");
        assert_eq!(dir.result(), format!("{want}\n"), "{name}");
        assert!(!meta_path(&args.file).exists(), "{name}: metadata left");
    }
}

#[test]
fn no_metadata_is_a_cold_start_and_an_unreadable_one_too() {
    let dir = Dir::new("none");
    let line = run(&dir.args(None, None));
    assert!(line.starts_with("cold: no saved items"), "{line}");
    let dir = Dir::new("unreadable");
    let args = dir.args(Some(64 << 20), None);
    std::fs::create_dir(meta_path(&args.file)).expect("a directory where the file should be");
    let line = run(&args);
    assert!(line.starts_with("cold: metadata unreadable"), "{line}");
}

#[test]
fn a_restart_within_the_second_of_the_stop_waits_for_the_next_one() {
    let meta = meta::parse(saved(0).as_bytes()).expect("valid");
    let layout = MemorySettings::of(&["-m".to_owned(), "64".to_owned()]);
    let at = meta.stop_time;
    let judged = |now| judge(&meta, Some(64 << 20), &layout, now, 300);
    assert_eq!(judged(at), Verdict::Restore { age: 0, wait: 1 });
    assert_eq!(judged(at - 2), Verdict::Restore { age: -2, wait: 3 });
    assert_eq!(judged(at + 5), Verdict::Restore { age: 5, wait: 0 });
    assert!(matches!(judged(at - 4), Verdict::Cold(r) if r.contains("in the future")));
}
