//! `memcached-hook warm-stop`: memcached's preStop hook with `warmRestart`. It sends SIGUSR1,
//! on which memcached stops gracefully and saves its metadata next to its memory file, and
//! waits for memcached to exit, so the kubelet's SIGTERM (which stops memcached without saving)
//! comes too late to matter. memcached is found by name among the processes the hook sees: its
//! own container's, or the pod's with `shareProcessNamespace`, where PID 1 is the sandbox.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::pod::memcached::{AdminError, find_process, signal};

/// How often the exit is checked.
const POLL: Duration = Duration::from_millis(50);

/// `warm-stop`'s arguments.
#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// memcached's memory file (`-e`): the log says whether `<file>.meta` was written.
    #[arg(long)]
    pub file: PathBuf,
    /// Seconds to wait before the signal (clients move away from a pod that is terminating).
    #[arg(long, default_value_t = 0)]
    pub delay_seconds: u64,
    /// Seconds to wait for memcached to exit (the grace period ends the pod anyway).
    #[arg(long, default_value_t = 600)]
    pub timeout_seconds: u64,
}

/// Whether process `pid` still runs (a zombie has exited).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // `pid (comm) state ...`: the state follows the last `)`.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Stops memcached gracefully; returns what happened, for the log.
///
/// # Errors
/// The signal could not be sent (another user): memcached then stops on the kubelet's SIGTERM
/// and the next start is cold.
pub fn run(args: &StopArgs) -> Result<String, AdminError> {
    std::thread::sleep(Duration::from_secs(args.delay_seconds));
    let pid = match find_process("memcached") {
        Ok(pid) => pid,
        Err(AdminError::NoProcess(_)) => return Ok("memcached is not running".to_owned()),
        Err(e) => return Err(e),
    };
    let start = Instant::now();
    signal(pid, rustix::process::Signal::USR1)?;
    let deadline = Duration::from_secs(args.timeout_seconds);
    while running(pid) && start.elapsed() < deadline {
        std::thread::sleep(POLL);
    }
    let mut meta = args.file.as_os_str().to_owned();
    meta.push(".meta");
    let saved = PathBuf::from(meta).exists();
    let took = start.elapsed().as_secs_f64();
    Ok(if running(pid) {
        format!("memcached (pid {pid}) still runs {took:.1} s after SIGUSR1")
    } else {
        format!("memcached (pid {pid}) stopped {took:.1} s after SIGUSR1; metadata saved: {saved}")
    })
}
