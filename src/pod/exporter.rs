//! `memcached-hook stats-exporter`: the metrics sidecar of a memcached pod with SASL on. The
//! Prometheus memcached exporter has no way to log in, so under `-Y` its `stats` is refused
//! (`CLIENT_ERROR unauthenticated`); this sidecar logs in with the first entry of the mounted
//! auth file and serves `stats` under the exporter's series names (`stats.rs`) on `GET /metrics`.
//! The file is read at every scrape, so a rotated password is used from the next scrape on.
//! The password is never logged or served.

pub mod stats;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::shared::check::{self, Credentials};
use super::shared::{listen, sidecar_runtime};
use crate::pod::memcached::{Admin, Stats};
use crate::process::METRICS_CONTENT_TYPE;

/// The exporter's port, which the Service and the ServiceMonitor name `metrics`.
pub const PORT: u16 = crate::children::ports::EXPORTER_PORT;

/// `memcached-hook stats-exporter` options.
#[derive(Debug, Clone, clap::Args)]
pub struct ExporterArgs {
    /// memcached's `-Y` auth file: its first `user:password` entry is the login. Without it,
    /// `stats` is sent without logging in.
    #[arg(long)]
    pub auth_file: Option<PathBuf>,
    /// memcached's plaintext listener on the pod's loopback.
    #[arg(long, default_value = "127.0.0.1:11211")]
    pub memcached_addr: SocketAddr,
    /// Where `GET /metrics` and `GET /healthz` are served.
    #[arg(long, default_value_t = SocketAddr::from(([0, 0, 0, 0], PORT)))]
    pub listen_addr: SocketAddr,
    /// Time allowed for each connection to memcached, in milliseconds.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub timeout_ms: u64,
}

/// The login in `path`, read now.
fn login(path: &Path) -> anyhow::Result<Credentials> {
    let bytes =
        std::fs::read(path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    check::auth_file(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// One scrape: memcached's stats, or why there are none (logged; `memcached_up` is then 0).
fn scrape(admin: &Admin, auth_file: Option<&Path>) -> Option<Stats> {
    let read = || -> anyhow::Result<Stats> {
        let login = auth_file.map(login).transpose()?;
        Ok(admin.stats(login.as_ref())?)
    };
    match read() {
        Ok(stats) => Some(stats),
        Err(e) => {
            tracing::warn!(error = %e, "memcached stats unavailable; serving memcached_up 0");
            None
        }
    }
}

/// Serves `GET /metrics` until SIGTERM/SIGINT.
///
/// # Errors
/// The listen address unavailable.
pub fn run(args: &ExporterArgs) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let admin = Admin {
        addr: args.memcached_addr,
        timeout: Duration::from_millis(args.timeout_ms),
    };
    let auth_file: Option<Arc<Path>> = args.auth_file.as_deref().map(Arc::from);
    sidecar_runtime()?.block_on(async move {
        let listener = listen(args.listen_addr).await?;
        let metrics = move || {
            let auth_file = auth_file.clone();
            async move {
                let text = tokio::task::spawn_blocking(move || {
                    stats::exposition(scrape(&admin, auth_file.as_deref()).as_ref())
                })
                .await
                .unwrap_or_else(|_| stats::exposition(None));
                (
                    [(axum::http::header::CONTENT_TYPE, METRICS_CONTENT_TYPE)],
                    text,
                )
            }
        };
        let router = axum::Router::new()
            .route("/metrics", axum::routing::get(metrics))
            .route("/healthz", axum::routing::get(|| async { "ok" }));
        tracing::info!(
            listen = %args.listen_addr,
            memcached = %args.memcached_addr,
            auth = args.auth_file.is_some(),
            "stats exporter serving"
        );
        axum::serve(listener, router)
            .with_graceful_shutdown(crate::process::shutdown_signal())
            .await
            .context("serving /metrics")
    })
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead as _, BufReader, Write as _};
    use std::sync::Mutex;

    use super::*;

    /// A stand-in for memcached: `STORED` for the login, `stats_reply` for `stats`, `maxconns`
    /// for `stats settings`. Records the auth tokens it was sent.
    fn fake(stats_reply: &'static str) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let tokens = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&tokens);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(4).flatten() {
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                    let reply = match line.as_str() {
                        l if l.starts_with("set auth") => {
                            let mut token = String::new();
                            let _ = reader.read_line(&mut token);
                            seen.lock().unwrap().push(token.trim_end().to_owned());
                            "STORED\r\n"
                        }
                        "stats\r\n" => stats_reply,
                        "stats settings\r\n" => "STAT maxconns 1024\r\nEND\r\n",
                        _ => "ERROR\r\n",
                    };
                    let _ = (&stream).write_all(reply.as_bytes());
                    line.clear();
                }
            }
        });
        (addr, tokens)
    }

    fn admin(addr: SocketAddr) -> Admin {
        Admin {
            addr,
            timeout: Duration::from_secs(2),
        }
    }

    #[test]
    fn logs_in_with_the_first_entry_of_the_auth_file_read_at_each_scrape() {
        let (addr, tokens) = fake("STAT curr_connections 3\r\nSTAT get_hits 5\r\nEND\r\n");
        let dir = std::env::temp_dir().join(format!("stats-exporter-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("password-file");
        std::fs::write(&file, "app:first\nother:x\n").unwrap();
        let stats = scrape(&admin(addr), Some(&file)).expect("stats");
        assert_eq!(stats.general["curr_connections"], "3");
        assert_eq!(stats.settings["maxconns"], "1024");
        std::fs::write(&file, "app:second\n").unwrap();
        assert!(scrape(&admin(addr), Some(&file)).is_some());
        assert_eq!(*tokens.lock().unwrap(), ["app first", "app second"]);
        std::fs::remove_file(&file).unwrap();
        assert!(
            scrape(&admin(addr), Some(&file)).is_none(),
            "no auth file: up 0"
        );
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn a_refused_stats_is_no_stats() {
        let (addr, _) = fake("CLIENT_ERROR unauthenticated\r\n");
        assert!(scrape(&admin(addr), None).is_none());
        let text = stats::exposition(scrape(&admin(addr), None).as_ref());
        assert!(text.contains("memcached_up 0\n"), "{text}");
    }
}
