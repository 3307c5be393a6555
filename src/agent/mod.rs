//! `memcached-hook reload-agent`: the sidecar that lets memcached pick up a rotated Secret without
//! a restart (issue 15). It polls the mounted files (kubelet swaps a Secret volume atomically),
//! and on a change of
//! - the TLS chain/key: checks the pair, then sends `refresh_certs` to memcached's loopback
//!   plaintext listener (memcached >= 1.5.13; new connections get the new certificate);
//! - the `-Y` auth file: checks it, then sends SIGHUP to memcached (>= 1.5.15 re-reads the file)
//!   and waits until the new login is accepted.
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

pub mod check;
pub mod memcached;
pub mod watch;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use check::Credentials;
use memcached::Admin;
use watch::{Group, Snapshot};

/// Default port of the agent's metrics endpoint (the exporter has 9150).
pub const METRICS_PORT: u16 = 9151;
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
    /// memcached's `-Y` auth file; its first entry is also the agent's own login.
    #[arg(long)]
    pub auth_file: Option<PathBuf>,
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

/// What was reloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// The TLS certificate and key.
    Tls,
    /// The `-Y` auth file.
    Auth,
}

impl What {
    const ALL: [Self; 2] = [Self::Tls, Self::Auth];
    fn label(self) -> &'static str {
        match self {
            Self::Tls => "tls",
            Self::Auth => "auth",
        }
    }
}

/// Reload outcomes, served in the Prometheus text format.
#[derive(Debug, Default)]
pub struct Metrics {
    succeeded: [AtomicU64; 2],
    failed: [AtomicU64; 2],
    last_success: [AtomicU64; 2],
}

impl Metrics {
    fn record(&self, what: What, ok: bool) {
        let i = what as usize;
        if ok {
            self.succeeded[i].fetch_add(1, Ordering::Relaxed);
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            self.last_success[i].store(now, Ordering::Relaxed);
        } else {
            self.failed[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Count of successes and failures for `what`.
    #[must_use]
    pub fn counts(&self, what: What) -> (u64, u64) {
        let i = what as usize;
        (
            self.succeeded[i].load(Ordering::Relaxed),
            self.failed[i].load(Ordering::Relaxed),
        )
    }

    /// The Prometheus text exposition.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::from(
            "# HELP memcached_reload_agent_reloads_total Reloads the agent asked memcached for, by material and outcome.\n\
             # TYPE memcached_reload_agent_reloads_total counter\n",
        );
        for what in What::ALL {
            let (ok, failed) = self.counts(what);
            let l = what.label();
            let _ = writeln!(
                out,
                "memcached_reload_agent_reloads_total{{what=\"{l}\",outcome=\"success\"}} {ok}"
            );
            let _ = writeln!(
                out,
                "memcached_reload_agent_reloads_total{{what=\"{l}\",outcome=\"failure\"}} {failed}"
            );
        }
        out.push_str(
            "# HELP memcached_reload_agent_last_success_timestamp_seconds When memcached last took new material (0: never).\n\
             # TYPE memcached_reload_agent_last_success_timestamp_seconds gauge\n",
        );
        for what in What::ALL {
            let t = self.last_success[what as usize].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "memcached_reload_agent_last_success_timestamp_seconds{{what=\"{}\"}} {t}",
                what.label()
            );
        }
        out
    }
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
                let login = check::auth_file(&watched.group.snapshot()?.contents[0])
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
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
        let login = match check::auth_file(snapshot.file(0)) {
            Ok(login) => login,
            Err(e) => {
                watched.refused(&snapshot);
                self.metrics.record(What::Auth, false);
                tracing::error!(what = "auth", error = %e, "reload failed: new auth file refused; memcached keeps the previous one");
                return;
            }
        };
        match reload_auth(&self.admin, &self.process_name, &login) {
            Ok(()) => {
                watched.succeeded(&snapshot);
                self.login = Some(login);
                self.metrics.record(What::Auth, true);
                tracing::info!(
                    what = "auth",
                    "reload succeeded: memcached accepts the new auth file"
                );
            }
            Err(e) if watched.applied.is_none() && e.unreachable() => {
                tracing::debug!(what = "auth", error = %e, "memcached not reachable yet");
            }
            Err(e) => {
                watched.failed(poll);
                self.metrics.record(What::Auth, false);
                tracing::error!(what = "auth", error = %e, retry_in_polls = watched.next_poll - poll, "reload failed; memcached keeps the previous auth file");
            }
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
        match self.admin.refresh_certs(self.login.as_ref()) {
            Ok(()) => {
                watched.succeeded(&snapshot);
                self.metrics.record(What::Tls, true);
                tracing::info!(
                    what = "tls",
                    "reload succeeded: memcached serves the new certificate to new connections"
                );
            }
            Err(e) if watched.applied.is_none() && e.unreachable() => {
                tracing::debug!(what = "tls", error = %e, "memcached not reachable yet");
            }
            Err(e) => {
                watched.failed(poll);
                self.metrics.record(What::Tls, false);
                tracing::error!(what = "tls", error = %e, retry_in_polls = watched.next_poll - poll, "reload failed; memcached keeps the previous certificate");
            }
        }
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

/// `GET /metrics` (the reload counters) and `GET /healthz`.
fn metrics_router(metrics: Arc<Metrics>) -> axum::Router {
    let text = move || {
        let m = Arc::clone(&metrics);
        async move {
            let content_type = (
                axum::http::header::CONTENT_TYPE,
                "text/plain; version=0.0.4",
            );
            ([content_type], m.render())
        }
    };
    axum::Router::new()
        .route("/metrics", axum::routing::get(text))
        .route("/healthz", axum::routing::get(|| async { "ok" }))
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.metrics_addr)
            .await
            .with_context(|| format!("listening on {}", args.metrics_addr))?;
        let router = metrics_router(Arc::clone(&metrics));
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
mod tests {
    use super::*;

    #[test]
    fn metrics_text() {
        let m = Metrics::default();
        m.record(What::Tls, true);
        m.record(What::Auth, false);
        let text = m.render();
        assert!(text.contains(
            "memcached_reload_agent_reloads_total{what=\"tls\",outcome=\"success\"} 1\n"
        ));
        assert!(text.contains(
            "memcached_reload_agent_reloads_total{what=\"auth\",outcome=\"failure\"} 1\n"
        ));
        assert!(
            text.contains(
                "memcached_reload_agent_last_success_timestamp_seconds{what=\"auth\"} 0\n"
            )
        );
    }

    /// A stand-in for memcached's admin listener that answers `OK` and counts the commands.
    fn fake_memcached() -> (SocketAddr, Arc<AtomicU64>) {
        use std::io::{BufRead as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(16).flatten() {
                let mut line = String::new();
                let mut reader = std::io::BufReader::new(&stream);
                if reader.read_line(&mut line).is_ok() && line == "refresh_certs\r\n" {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let _ = (&stream).write_all(b"OK\r\n");
                }
            }
        });
        (addr, seen)
    }

    /// The first poll delivers what is mounted; a refused change is never sent and not retried
    /// until the content changes again.
    #[test]
    fn refused_material_is_never_sent_and_not_retried() {
        let (cert, key) = check::tests::pair("one");
        let (_, other_key) = check::tests::pair("two");
        let mut volume = watch::tests::Volume::new(
            "agent-refuse",
            &[("tls.crt", cert.as_bytes()), ("tls.key", key.as_bytes())],
        );
        let (admin_addr, sent) = fake_memcached();
        let args = Args {
            tls_cert: Some(volume.path("tls.crt")),
            tls_key: Some(volume.path("tls.key")),
            tls_ca: None,
            auth_file: None,
            admin_addr,
            metrics_addr: "127.0.0.1:0".parse().unwrap(),
            interval_seconds: 1,
            timeout_ms: 2000,
            process_name: "memcached".into(),
        };
        let metrics = Arc::new(Metrics::default());
        let mut agent = Agent::new(&args, Arc::clone(&metrics)).unwrap();
        agent.poll();
        assert_eq!(metrics.counts(What::Tls), (1, 0), "first delivery");
        agent.poll();
        assert_eq!(
            sent.load(Ordering::SeqCst),
            1,
            "unchanged files: nothing sent"
        );
        volume.publish(&[
            ("tls.crt", cert.as_bytes()),
            ("tls.key", other_key.as_bytes()),
        ]);
        for _ in 0..3 {
            agent.poll();
        }
        assert_eq!(
            metrics.counts(What::Tls),
            (1, 1),
            "refused once, not retried"
        );
        assert_eq!(
            sent.load(Ordering::SeqCst),
            1,
            "a foreign key never reaches memcached"
        );
        let (third_cert, third_key) = check::tests::pair("three");
        volume.publish(&[
            ("tls.crt", third_cert.as_bytes()),
            ("tls.key", third_key.as_bytes()),
        ]);
        agent.poll();
        assert_eq!(metrics.counts(What::Tls), (2, 1));
        assert_eq!(sent.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn before_the_first_delivery_an_absent_memcached_is_no_failure() {
        let (cert, key) = check::tests::pair("one");
        let volume = watch::tests::Volume::new(
            "agent-absent",
            &[("tls.crt", cert.as_bytes()), ("tls.key", key.as_bytes())],
        );
        let args = Args {
            tls_cert: Some(volume.path("tls.crt")),
            tls_key: Some(volume.path("tls.key")),
            tls_ca: None,
            auth_file: None,
            // Nothing listens on the discard port.
            admin_addr: "127.0.0.1:9".parse().unwrap(),
            metrics_addr: "127.0.0.1:0".parse().unwrap(),
            interval_seconds: 1,
            timeout_ms: 200,
            process_name: "memcached".into(),
        };
        let metrics = Arc::new(Metrics::default());
        let mut agent = Agent::new(&args, Arc::clone(&metrics)).unwrap();
        agent.poll();
        agent.poll();
        assert_eq!(metrics.counts(What::Tls), (0, 0));
    }
}
