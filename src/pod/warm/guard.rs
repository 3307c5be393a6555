//! `memcached-hook warm-guard`: the init container that runs before memcached with
//! `warmRestart`. It keeps `<file>.meta` only when memcached can restore from it safely and
//! removes it otherwise, so a bad file means a cold start, never a crash loop. It never fails
//! for a bad file; its one-line result (`restore: ...` or `cold: ...`) goes to the log and to
//! the termination message, where `kubectl get pod -o yaml` shows it.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::meta::{self, Meta};
use crate::children::memory::MemorySettings;
use crate::children::warm_restart::{GUARD_COLD, GUARD_RESTORE};

/// A stop time this many seconds ahead of the clock is waited for (memcached 1.6.18 restores
/// only when at least one second has passed since the stop, by its clock); further ahead, the
/// clocks disagree and the start is cold.
pub const CLOCK_SLACK_SECONDS: i64 = 3;

/// `warm-guard`'s arguments.
#[derive(Debug, clap::Args)]
pub struct GuardArgs {
    /// memcached's memory file (`-e`); the metadata is `<file>.meta`.
    #[arg(long)]
    pub file: PathBuf,
    /// Items saved longer ago than this are not restored.
    #[arg(long, default_value_t = 300)]
    pub max_stale_seconds: u64,
    /// Copy this binary there (for memcached's preStop hook).
    #[arg(long)]
    pub copy_binary_to: Option<PathBuf>,
    /// Where the one-line result is written (the container's termination message).
    #[arg(long, default_value = "/dev/termination-log")]
    pub result_file: PathBuf,
    /// memcached's arguments: the memory layout the saved items must match.
    #[arg(last = true)]
    pub memcached_args: Vec<String>,
}

/// What the guard decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The metadata is kept; memcached restores from it once `wait` has passed.
    Restore {
        /// Seconds since the stop.
        age: i64,
        /// Seconds to wait first (a restart within the second of the stop).
        wait: u64,
    },
    /// The metadata (if any) is removed: memcached starts empty, for this reason.
    Cold(String),
}

impl Verdict {
    /// The one-line result.
    #[must_use]
    pub fn line(&self) -> String {
        match self {
            Self::Restore { age, .. } => format!("{GUARD_RESTORE} items saved {age} s ago"),
            Self::Cold(reason) => format!("{GUARD_COLD} {reason}"),
        }
    }
}

/// The decision for metadata `meta` (already read), a memory file of `data_len` bytes,
/// memcached's `layout` and the clock at `now` (seconds since the epoch).
#[must_use]
pub fn judge(
    meta: &Meta,
    data_len: Option<u64>,
    layout: &MemorySettings,
    now: i64,
    max: u64,
) -> Verdict {
    if data_len != Some(meta.maxbytes) {
        let shown = data_len.map_or_else(|| "no".to_owned(), |n| format!("{n} bytes of"));
        return Verdict::Cold(format!(
            "{shown} memory file, the metadata says {} bytes",
            meta.maxbytes
        ));
    }
    let changes = meta.layout_changes(layout);
    if !changes.is_empty() {
        return Verdict::Cold(format!("memory layout changed: {}", changes.join(", ")));
    }
    let age = now - meta.stop_time;
    if age < -CLOCK_SLACK_SECONDS {
        return Verdict::Cold(format!("saved {} s in the future by this clock", -age));
    }
    if u64::try_from(age).is_ok_and(|a| a > max) {
        return Verdict::Cold(format!(
            "stale: items saved {age} s ago, the bound is {max} s"
        ));
    }
    let wait = u64::try_from(1 - age).unwrap_or(0);
    Verdict::Restore { age, wait }
}

/// Reads `<file>.meta` and decides; `None` when there is no metadata file.
fn decide(
    file: &Path,
    meta_path: &Path,
    layout: &MemorySettings,
    now: i64,
    max: u64,
) -> Option<Verdict> {
    let opened = match std::fs::File::open(meta_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        other => other,
    };
    let mut text = Vec::new();
    let limit = u64::try_from(meta::MAX_LEN + 1).unwrap_or(u64::MAX);
    if let Err(e) = opened.and_then(|f| f.take(limit).read_to_end(&mut text)) {
        return Some(Verdict::Cold(format!("metadata unreadable: {e}")));
    }
    let meta = match meta::parse(&text) {
        Ok(meta) => meta,
        Err(reason) => return Some(Verdict::Cold(format!("metadata invalid: {reason}"))),
    };
    let data_len = std::fs::metadata(file).ok().map(|m| m.len());
    Some(judge(&meta, data_len, layout, now, max))
}

fn meta_path(file: &Path) -> PathBuf {
    let mut path = file.as_os_str().to_owned();
    path.push(".meta");
    PathBuf::from(path)
}

fn now() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}

/// Runs the guard: decides, removes the metadata of a cold start, waits a restore's second,
/// copies the binary, writes the result. Returns the result line; never fails for a bad file.
#[must_use]
pub fn run(args: &GuardArgs) -> String {
    if let Some(target) = &args.copy_binary_to {
        copy_self(target);
    }
    let layout = MemorySettings::of(&args.memcached_args);
    let path = meta_path(&args.file);
    let verdict =
        decide(&args.file, &path, &layout, now(), args.max_stale_seconds).unwrap_or_else(|| {
            Verdict::Cold(
                "no saved items (a first start, or the last stop was not graceful)".into(),
            )
        });
    let mut line = verdict.line();
    match &verdict {
        Verdict::Cold(_) => {
            if let Err(e) = std::fs::remove_file(&path)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                line = format!("{line} (removing the metadata failed: {e})");
            }
        }
        Verdict::Restore { wait, .. } => std::thread::sleep(Duration::from_secs(*wait)),
    }
    tracing::info!(file = %args.file.display(), result = %line, "warm restart guard");
    if let Err(e) = std::fs::write(&args.result_file, format!("{line}\n")) {
        tracing::warn!(file = %args.result_file.display(), error = %e, "writing the result");
    }
    line
}

/// Copies the running binary to `target` (mode 0755). A failure is logged: the pod still
/// starts, and a stop without the binary is not graceful (the next start is cold).
fn copy_self(target: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let copied = std::env::current_exe().and_then(|me| std::fs::copy(me, target));
    let result = copied
        .and_then(|_| std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755)));
    if let Err(e) = result {
        tracing::error!(target = %target.display(), error = %e, "copying the binary for the preStop hook");
    }
}

#[cfg(test)]
mod tests;
