//! Proxy mode: memcached's proxy re-reads its route configuration on SIGHUP. The agent signals
//! the proxy only once it answers `stats` as a proxy (its handler is in place before it
//! listens; an unhandled SIGHUP would end it), then confirms the load from the proxy's own
//! counters: `proxy_config_reloads` grows when a load starts, `proxy_config_reload_fails` when
//! one is refused (the proxy then keeps the previous routes).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::pod::memcached::{self, Admin, AdminError};

/// Longest wait for the proxy to start loading after SIGHUP (memcached looks once a second).
const RELOAD_SETTLE: Duration = Duration::from_secs(5);
/// Time between two looks at the counters while waiting.
const LOOK_EVERY: Duration = Duration::from_millis(100);
/// After a load started, a further look this much later: a refusal by a worker thread is
/// counted after the start.
const CONFIRM_AFTER: Duration = Duration::from_millis(300);
/// The proxy's count of configuration loads (its first included).
const RELOADS: &str = "proxy_config_reloads";
/// The proxy's count of refused loads.
const FAILS: &str = "proxy_config_reload_fails";

/// The proxy's two load counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Loads {
    started: u64,
    refused: u64,
}

fn loads(admin: &Admin) -> Result<Loads, AdminError> {
    let stats = admin.general_stats()?;
    let counter = |name: &str, stats: &BTreeMap<String, String>| {
        stats
            .get(name)
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| {
                AdminError::Refused(format!(
                    "no {name} in the stats of {}: not memcached's proxy; not signalling it",
                    admin.addr
                ))
            })
    };
    Ok(Loads {
        started: counter(RELOADS, &stats)?,
        refused: counter(FAILS, &stats)?,
    })
}

/// Sends SIGHUP to the proxy named `process` that listens on the admin address and waits until
/// it loaded the routes again: `Ok` once a load started and none was refused since.
///
/// # Errors
/// The proxy unreachable or not a proxy (then it is not signalled), not found, a load refused
/// ([`AdminError::RoutesRefused`]), or no load started within [`RELOAD_SETTLE`].
pub(super) fn reload(admin: &Admin, process: &str) -> Result<(), AdminError> {
    let before = loads(admin)?;
    let pid = memcached::find_listener(process, admin.addr.port())?;
    memcached::hangup(pid)?;
    let sent = Instant::now();
    loop {
        std::thread::sleep(LOOK_EVERY);
        let now = loads(admin)?;
        if now.refused > before.refused {
            return Err(refused(before, now));
        }
        if now.started > before.started {
            std::thread::sleep(CONFIRM_AFTER);
            let after = loads(admin)?;
            return if after.refused > before.refused {
                Err(refused(before, after))
            } else {
                Ok(())
            };
        }
        if sent.elapsed() > RELOAD_SETTLE {
            return Err(AdminError::NoReload(format!(
                "no load started within {}s of SIGHUP to pid {pid} ({RELOADS} still {})",
                RELOAD_SETTLE.as_secs(),
                now.started
            )));
        }
    }
}

fn refused(before: Loads, now: Loads) -> AdminError {
    AdminError::RoutesRefused(format!(
        "the proxy refused them ({FAILS} {} -> {}) and keeps the previous ones",
        before.refused, now.refused
    ))
}
