//! `memcached-hook reload-agent`: the sidecar that lets memcached pick up a rotated Secret without
//! a restart. It polls the mounted files (kubelet swaps a Secret volume atomically),
//! and on a change of
//! - the TLS chain/key: checks the pair, then sends `refresh_certs` to memcached's loopback
//!   plaintext listener (memcached >= 1.5.13; new connections get the new certificate);
//! - the Secret's auth file: normalises and checks it, writes the copy memcached's `-Y` reads
//!   (`src/pod/auth_file.rs`), then sends SIGHUP to memcached (>= 1.5.15 re-reads the file) and
//!   waits until the new login is accepted.
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
//!
//! With `--proxy-routes` (proxy mode, in a pod of memcached's proxy) it watches the proxy's
//! mounted route configuration instead, and on a change sends SIGHUP to the proxy that listens
//! on the admin address and confirms the load from the proxy's `stats` (`routes.rs`, field
//! `what` = `routes`). A configuration the proxy refuses is counted as a failure and not sent
//! again until it changes; the proxy keeps the routes it has.
//!
//! With `--pod-condition` the outcomes also decide the condition `memcached.c5c3.io/SecretReload`
//! on the agent's own Pod (`condition.rs`: True/`Reloaded` once every watched group's latest
//! content was delivered, False/`ReloadFailed` with the error while one failed), which a task of
//! its own writes through the API server (`pod_condition.rs`, `apiclient.rs`): a PATCH of
//! `pods/status` only when the condition changes, retried with a back-off, never waited on by a
//! reload. The hook with `--relate-pods` reads it from the Memcached's Pods.

pub mod apiclient;
mod args;
pub mod condition;
mod metrics;
pub mod pod_condition;
mod routes;
mod watched;

pub use args::Args;
use metrics::{Metrics, What};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::auth_file;
use super::memcached::{self, Admin};
use super::shared::check::{self, Credentials};
use super::shared::{listen, sidecar_runtime};
use condition::{Desired, Outcomes, Report};
use watched::Watched;

/// Default port of the agent's metrics endpoint (the port its container declares).
pub const METRICS_PORT: u16 = crate::children::ports::RELOAD_AGENT_PORT;
/// Longest wait for memcached to take a new auth file after SIGHUP (it looks once a second).
const AUTH_SETTLE: Duration = Duration::from_secs(5);
/// Longest wait for one answer of the API server (--pod-condition).
const API_TIMEOUT: Duration = Duration::from_secs(10);

/// The agent's state between polls.
pub struct Agent {
    tls: Option<(Watched, bool)>,
    auth: Option<Watched>,
    routes: Option<Watched>,
    admin: Admin,
    login: Option<Credentials>,
    auth_copy: Option<PathBuf>,
    process_name: String,
    report: Report,
    poll: u64,
}

impl Agent {
    /// Reads the files as they are now: that is what memcached loaded at its start. Outcomes
    /// are counted in `metrics` and, when `condition` is given, turned into the desired Pod
    /// condition sent there.
    ///
    /// # Errors
    /// A watched file that cannot be read.
    pub fn new(
        args: &Args,
        metrics: Arc<Metrics>,
        condition: Option<tokio::sync::watch::Sender<Option<Desired>>>,
    ) -> anyhow::Result<Self> {
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
                let login = auth_file::normalise(watched.group.snapshot()?.file(0))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
                    .login;
                (Some(watched), Some(login))
            }
            None => (None, None),
        };
        let routes = args
            .proxy_routes
            .as_ref()
            .map(|path| Watched::new(vec![path.clone()]))
            .transpose()?;
        let outcomes = Outcomes::new(tls.is_some(), auth.is_some());
        Ok(Self {
            tls,
            auth,
            routes,
            admin: Admin {
                addr: args.admin_addr,
                timeout: Duration::from_millis(args.timeout_ms),
            },
            login,
            auth_copy: args.auth_copy.clone(),
            process_name: args.process_name.clone(),
            report: Report::new(metrics, outcomes, condition),
            poll: 0,
        })
    }

    /// One look at the files, and the reloads it calls for: the auth file first, so that a TLS
    /// reload after a rotation of both logs in with the new password.
    pub fn poll(&mut self) {
        self.poll += 1;
        self.poll_auth();
        self.poll_tls();
        self.poll_routes();
    }

    fn poll_routes(&mut self) {
        let poll = self.poll;
        let Some(watched) = self.routes.as_mut() else {
            return;
        };
        let Some(snapshot) = watched.pending(poll, What::Routes) else {
            return;
        };
        match routes::reload(&self.admin, &self.process_name) {
            Err(e @ memcached::AdminError::RoutesRefused(_)) => {
                watched.refused(&snapshot);
                self.report.outcome(What::Routes, Err(&e));
                tracing::error!(what = "routes", error = %e, "reload failed: the proxy keeps the previous routes");
            }
            result => {
                watched.settle(&snapshot, poll, &mut self.report, What::Routes, result);
            }
        }
    }

    fn poll_auth(&mut self) {
        let poll = self.poll;
        let Some(watched) = self.auth.as_mut() else {
            return;
        };
        let Some(snapshot) = watched.pending(poll, What::Auth) else {
            return;
        };
        let new = match auth_file::normalise(snapshot.file(0)) {
            Ok(new) => new,
            Err(e) => {
                watched.refused(&snapshot);
                self.report.outcome(What::Auth, Err(&e));
                tracing::error!(what = "auth", error = %e, "reload failed: new auth file refused; memcached keeps the previous one");
                return;
            }
        };
        let result = self
            .auth_copy
            .as_deref()
            .map_or(Ok(false), |copy| {
                auth_file::write_copy(copy, &new.bytes).map_err(|source| {
                    memcached::AdminError::Copy {
                        path: copy.display().to_string(),
                        source,
                    }
                })
            })
            .and_then(|_| reload_auth(&self.admin, &self.process_name, &new.login));
        if watched.settle(&snapshot, poll, &mut self.report, What::Auth, result) {
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
            self.report.outcome(What::Tls, Err(&e));
            tracing::error!(what = "tls", error = %e, "reload failed: new TLS material refused; memcached keeps the previous certificate");
            return;
        }
        let result = self.admin.refresh_certs(self.login.as_ref());
        watched.settle(&snapshot, poll, &mut self.report, What::Tls, result);
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

/// The writer of the Pod condition with --pod-condition: its client is built at start, so that
/// missing settings stop the agent before it runs.
fn condition_writer(
    args: &Args,
    metrics: &Arc<Metrics>,
) -> anyhow::Result<Option<pod_condition::Writer>> {
    use anyhow::Context as _;
    if !args.pod_condition {
        return Ok(None);
    }
    let (Some(namespace), Some(name)) = (&args.pod_namespace, &args.pod_name) else {
        anyhow::bail!(
            "--pod-condition needs --pod-name and --pod-namespace (or POD_NAME and POD_NAMESPACE)"
        );
    };
    let pod = pod_condition::PodRef::new(namespace, name).map_err(anyhow::Error::msg)?;
    let client =
        apiclient::ApiClient::in_cluster(&args.api_token_file, &args.api_ca_file, API_TIMEOUT)
            .context("--pod-condition")?;
    Ok(Some(pod_condition::Writer {
        client,
        pod,
        metrics: Arc::clone(metrics),
        interval: Duration::from_secs(args.interval_seconds),
    }))
}

/// Runs the agent until SIGTERM/SIGINT.
///
/// # Errors
/// Unreadable files at start, or the metrics address unavailable.
pub fn run(args: &Args) -> anyhow::Result<()> {
    use anyhow::Context as _;
    if args.tls_cert.is_none() && args.auth_file.is_none() && args.proxy_routes.is_none() {
        anyhow::bail!(
            "nothing to watch: give --tls-cert/--tls-key and/or --auth-file, or --proxy-routes"
        );
    }
    let metrics = Arc::new(Metrics::default());
    let writer = condition_writer(args, &metrics)?;
    let (condition, desired) = tokio::sync::watch::channel(None);
    let mut agent = Agent::new(
        args,
        Arc::clone(&metrics),
        writer.is_some().then_some(condition),
    )?;
    sidecar_runtime()?.block_on(async move {
        let listener = listen(args.metrics_addr).await?;
        let router = metrics::metrics_router(Arc::clone(&metrics));
        tracing::info!(
            metrics = %args.metrics_addr,
            admin = %args.admin_addr,
            tls = args.tls_cert.is_some(),
            auth = args.auth_file.is_some(),
            proxy_routes = args.proxy_routes.is_some(),
            interval_seconds = args.interval_seconds,
            pod_condition = args.pod_condition,
            "reload agent watching"
        );
        let server = tokio::spawn(async move { axum::serve(listener, router).await });
        let writer = writer.map(|w| tokio::spawn(w.run(desired)));
        let shutdown = crate::process::shutdown_signal();
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
        writer.inspect(tokio::task::JoinHandle::abort);
        tracing::info!("reload agent stopped");
        Ok(())
    })
}

#[cfg(test)]
mod tests;
