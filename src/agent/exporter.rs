//! `memcached-hook stats-exporter`: the metrics sidecar of a memcached pod with SASL on. The
//! Prometheus memcached exporter has no way to log in, so under `-Y` its `stats` is refused
//! (`CLIENT_ERROR unauthenticated`); this sidecar logs in with the first entry of the mounted
//! auth file and serves `stats` under the exporter's series names (`stats.rs`) on `GET /metrics`.
//! The file is read at every scrape, so a rotated password is used from the next scrape on.
//! The password is never logged or served.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::check::{self, Credentials};
use super::memcached::{Admin, Stats};
use super::stats;
use crate::server::metrics::CONTENT_TYPE;

/// The exporter's port, which the Service and the ServiceMonitor name `metrics`.
pub const PORT: u16 = 9150;

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
    super::sidecar_runtime()?.block_on(async move {
        let listener = super::listen(args.listen_addr).await?;
        let metrics = move || {
            let auth_file = auth_file.clone();
            async move {
                let text = tokio::task::spawn_blocking(move || {
                    stats::exposition(scrape(&admin, auth_file.as_deref()).as_ref())
                })
                .await
                .unwrap_or_else(|_| stats::exposition(None));
                ([(axum::http::header::CONTENT_TYPE, CONTENT_TYPE)], text)
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
            .with_graceful_shutdown(crate::server::shutdown_signal())
            .await
            .context("serving /metrics")
    })
}
