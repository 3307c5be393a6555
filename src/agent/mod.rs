//! `memcached-hook reload-agent`: the sidecar that lets memcached pick up a rotated Secret without
//! a restart. It polls the mounted files (kubelet swaps a Secret volume atomically),
//! and on a change of
//! - the TLS chain/key: checks the pair, then sends `refresh_certs` to memcached's loopback
//!   plaintext listener (memcached >= 1.5.13; new connections get the new certificate);
//! - the Secret's auth file: normalises and checks it, writes the copy memcached's `-Y` reads
//!   (`authfile.rs`), then sends SIGHUP to memcached (>= 1.5.15 re-reads the file) and waits
//!   until the new login is accepted.
//!
//! At start it does not know what memcached loaded (a native sidecar starts before memcached, and
//! may restart after a rotation it never delivered), so its first delivery brings memcached to the
//! mounted files once memcached answers: `refresh_certs` (harmless when nothing changed) and a
//! login with the mounted password (SIGHUP only when that login is refused). Those count as
//! reloads too.
//!
//! It never stops or restarts memcached: on any error it logs, counts a failure and leaves the
//! material memcached already has in force (retrying delivery with a back-off; content it refused
//! is not retried until it changes). Each outcome is a log line (`reload succeeded` /
//! `reload failed`, field `what` = `tls` or `auth`) and a counter on `GET /metrics`.

pub mod authfile;
pub mod check;
pub mod exporter;
pub mod memcached;
mod metrics;
pub mod stats;
pub mod watch;

pub use metrics::{Metrics, What};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use check::Credentials;
use memcached::Admin;
use watch::{Group, Snapshot};

/// Default port of the agent's metrics endpoint (the port its container declares).
pub const METRICS_PORT: u16 = crate::children::ports::RELOAD_AGENT_PORT;
/// Longest wait for memcached to take a new auth file after SIGHUP (it looks once a second).
const AUTH_SETTLE: Duration = Duration::from_secs(5);
/// Most polls between two delivery attempts after repeated failures.
const MAX_BACKOFF_POLLS: u64 = 64;

/// `memcached-hook reload-agent` options.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// memcached's `ssl_chain_cert` file (needs --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// memcached's `ssl_key` file.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// memcached's `ssl_ca_cert` file, checked with the pair (memcached reloads it additively).
    #[arg(long, requires = "tls_cert")]
    pub tls_ca: Option<PathBuf>,
    /// The Secret's auth file; its first entry is also the agent's own login.
    #[arg(long)]
    pub auth_file: Option<PathBuf>,
    /// Where memcached's `-Y` points: a new auth file is written there, normalised, before the
    /// SIGHUP. Without it memcached is taken to read --auth-file itself.
    #[arg(long, requires = "auth_file")]
    pub auth_copy: Option<PathBuf>,
    /// memcached's plaintext listener on the pod's loopback.
    #[arg(long, default_value = "127.0.0.1:11211")]
    pub admin_addr: SocketAddr,
    /// Where `GET /metrics` and `GET /healthz` are served.
    #[arg(long, default_value_t = SocketAddr::from(([0, 0, 0, 0], METRICS_PORT)))]
    pub metrics_addr: SocketAddr,
    /// Seconds between two looks at the files.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub interval_seconds: u64,
    /// Time allowed for each connection to memcached, in milliseconds.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub timeout_ms: u64,
    /// memcached's process name (`/proc/<pid>/comm`) for SIGHUP.
    #[arg(long, default_value = "memcached")]
    pub process_name: String,
}

/// One watched group and what became of its content.
struct Watched {
    group: Group,
    /// The content memcached has, as far as the agent knows; `None` until the first delivery
    /// (the agent may start before memcached, or restart after a rotation it never delivered).
    applied: Option<[u8; 32]>,
    /// Content refused by the checks: not retried until it changes.
    refused: Option<[u8; 32]>,
    failures: u32,
    next_poll: u64,
    last_error: Option<String>,
}

impl Watched {
    fn new(files: Vec<PathBuf>) -> Result<Self, watch::WatchError> {
        let group = Group::new(files);
        group.snapshot()?;
        Ok(Self {
            group,
            applied: None,
            refused: None,
            failures: 0,
            next_poll: 0,
            last_error: None,
        })
    }

    /// New content to act on now, if any. A read error is logged once per distinct error.
    fn pending(&mut self, poll: u64, what: What) -> Option<Snapshot> {
        match self.group.snapshot() {
            Ok(s) => {
                self.last_error = None;
                let new = Some(s.digest) != self.applied && Some(s.digest) != self.refused;
                (new && poll >= self.next_poll).then_some(s)
            }
            Err(e) => {
                let text = e.to_string();
                if self.last_error.as_deref() != Some(text.as_str()) {
                    tracing::warn!(what = what.label(), error = %text, "cannot read the mounted files; memcached keeps what it has");
                    self.last_error = Some(text);
                }
                None
            }
        }
    }

    fn succeeded(&mut self, s: &Snapshot) {
        self.applied = Some(s.digest);
        self.refused = None;
        self.failures = 0;
        self.next_poll = 0;
    }

    fn refused(&mut self, s: &Snapshot) {
        self.refused = Some(s.digest);
    }

    /// Records what became of delivering `snapshot`: memcached took it; memcached was not
    /// reachable yet before the first delivery (it is starting: no failure); or a failure,
    /// retried with a back-off. Whether memcached took it.
    fn settle(
        &mut self,
        snapshot: &Snapshot,
        poll: u64,
        metrics: &Metrics,
        what: What,
        result: Result<(), memcached::AdminError>,
    ) -> bool {
        let (took, kept) = match what {
            What::Tls => (
                "reload succeeded: memcached serves the new certificate to new connections",
                "reload failed; memcached keeps the previous certificate",
            ),
            What::Auth => (
                "reload succeeded: memcached accepts the new auth file",
                "reload failed; memcached keeps the previous auth file",
            ),
        };
        let what_label = what.label();
        match result {
            Ok(()) => {
                self.succeeded(snapshot);
                metrics.record(what, true);
                tracing::info!(what = what_label, "{took}");
                true
            }
            Err(e) if self.applied.is_none() && e.unreachable() => {
                tracing::debug!(what = what_label, error = %e, "memcached not reachable yet");
                false
            }
            Err(e) => {
                self.failed(poll);
                metrics.record(what, false);
                let retry_in_polls = self.next_poll - poll;
                tracing::error!(what = what_label, error = %e, retry_in_polls, "{kept}");
                false
            }
        }
    }

    fn failed(&mut self, poll: u64) {
        self.failures = self.failures.saturating_add(1);
        self.next_poll = poll + (1u64 << self.failures.min(6)).min(MAX_BACKOFF_POLLS);
    }
}

/// The agent's state between polls.
pub struct Agent {
    tls: Option<(Watched, bool)>,
    auth: Option<Watched>,
    admin: Admin,
    login: Option<Credentials>,
    auth_copy: Option<PathBuf>,
    process_name: String,
    metrics: Arc<Metrics>,
    poll: u64,
}

impl Agent {
    /// Reads the files as they are now: that is what memcached loaded at its start.
    ///
    /// # Errors
    /// A watched file that cannot be read.
    pub fn new(args: &Args, metrics: Arc<Metrics>) -> anyhow::Result<Self> {
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => {
                let mut files = vec![cert.clone(), key.clone()];
                files.extend(args.tls_ca.clone());
                Some((Watched::new(files)?, args.tls_ca.is_some()))
            }
            _ => None,
        };
        let (auth, login) = match &args.auth_file {
            Some(path) => {
                let watched = Watched::new(vec![path.clone()])?;
                let login = authfile::normalise(watched.group.snapshot()?.file(0))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
                    .login;
                (Some(watched), Some(login))
            }
            None => (None, None),
        };
        Ok(Self {
            tls,
            auth,
            admin: Admin {
                addr: args.admin_addr,
                timeout: Duration::from_millis(args.timeout_ms),
            },
            login,
            auth_copy: args.auth_copy.clone(),
            process_name: args.process_name.clone(),
            metrics,
            poll: 0,
        })
    }

    /// One look at the files, and the reloads it calls for: the auth file first, so that a TLS
    /// reload after a rotation of both logs in with the new password.
    pub fn poll(&mut self) {
        self.poll += 1;
        self.poll_auth();
        self.poll_tls();
    }

    fn poll_auth(&mut self) {
        let poll = self.poll;
        let Some(watched) = self.auth.as_mut() else {
            return;
        };
        let Some(snapshot) = watched.pending(poll, What::Auth) else {
            return;
        };
        let new = match authfile::normalise(snapshot.file(0)) {
            Ok(new) => new,
            Err(e) => {
                watched.refused(&snapshot);
                self.metrics.record(What::Auth, false);
                tracing::error!(what = "auth", error = %e, "reload failed: new auth file refused; memcached keeps the previous one");
                return;
            }
        };
        let result = self
            .auth_copy
            .as_deref()
            .map_or(Ok(false), |copy| {
                authfile::write_copy(copy, &new.bytes).map_err(|source| {
                    memcached::AdminError::Copy {
                        path: copy.display().to_string(),
                        source,
                    }
                })
            })
            .and_then(|_| reload_auth(&self.admin, &self.process_name, &new.login));
        if watched.settle(&snapshot, poll, &self.metrics, What::Auth, result) {
            self.login = Some(new.login);
        }
    }

    fn poll_tls(&mut self) {
        let poll = self.poll;
        let Some((watched, with_ca)) = self.tls.as_mut() else {
            return;
        };
        let Some(snapshot) = watched.pending(poll, What::Tls) else {
            return;
        };
        let ca = with_ca.then(|| snapshot.file(2));
        if let Err(e) = check::tls(snapshot.file(0), snapshot.file(1), ca) {
            watched.refused(&snapshot);
            self.metrics.record(What::Tls, false);
            tracing::error!(what = "tls", error = %e, "reload failed: new TLS material refused; memcached keeps the previous certificate");
            return;
        }
        let result = self.admin.refresh_certs(self.login.as_ref());
        watched.settle(&snapshot, poll, &self.metrics, What::Tls, result);
    }
}

/// SIGHUP unless memcached already accepts `login`, then waits until it does.
fn reload_auth(
    admin: &Admin,
    process: &str,
    login: &Credentials,
) -> Result<(), memcached::AdminError> {
    if admin.accepts(login)? {
        return Ok(());
    }
    memcached::hangup(memcached::find_process(process)?)?;
    let started = std::time::Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(250));
        if admin.accepts(login)? {
            return Ok(());
        }
        if started.elapsed() > AUTH_SETTLE {
            return Err(memcached::AdminError::Login(format!(
                "new login still refused {}s after SIGHUP",
                AUTH_SETTLE.as_secs()
            )));
        }
    }
}

/// The small runtime of a sidecar (one worker: it serves a scrape now and then).
fn sidecar_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context as _;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the runtime")
}

/// The sidecar's HTTP listener on `addr`.
async fn listen(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    use anyhow::Context as _;
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))
}

/// Runs the agent until SIGTERM/SIGINT.
///
/// # Errors
/// Unreadable files at start, or the metrics address unavailable.
pub fn run(args: &Args) -> anyhow::Result<()> {
    use anyhow::Context as _;
    if args.tls_cert.is_none() && args.auth_file.is_none() {
        anyhow::bail!("nothing to watch: give --tls-cert/--tls-key and/or --auth-file");
    }
    let metrics = Arc::new(Metrics::default());
    let mut agent = Agent::new(args, Arc::clone(&metrics))?;
    sidecar_runtime()?.block_on(async move {
        let listener = listen(args.metrics_addr).await?;
        let router = metrics::metrics_router(Arc::clone(&metrics));
        tracing::info!(
            metrics = %args.metrics_addr,
            admin = %args.admin_addr,
            tls = args.tls_cert.is_some(),
            auth = args.auth_file.is_some(),
            interval_seconds = args.interval_seconds,
            "reload agent watching"
        );
        let server = tokio::spawn(async move { axum::serve(listener, router).await });
        let shutdown = crate::server::shutdown_signal();
        tokio::pin!(shutdown);
        let mut ticker = tokio::time::interval(Duration::from_secs(args.interval_seconds));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = &mut shutdown => break,
            }
            agent = tokio::task::spawn_blocking(move || {
                agent.poll();
                agent
            })
            .await
            .context("the poll task")?;
        }
        server.abort();
        tracing::info!("reload agent stopped");
        Ok(())
    })
}

#[cfg(test)]
mod tests;
