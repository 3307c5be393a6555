//! The HTTP server: `POST /sync`, `POST /customize`, `GET /healthz`, `GET /readyz`,
//! `GET /metrics`.
//!
//! A thin shell around [`crate::sync`]: it checks the content type, answers a matching
//! `If-None-Match` with 304 before decoding, decodes the body, calls the pure function and
//! encodes the answer. Malformed input gets a 4xx with a JSON body; nothing ever answers 200
//! to a request it could not understand.

pub mod auth;
pub mod budget;
mod error;
mod handlers;
mod write_timeout;
use write_timeout::WRITE_TIMEOUT;
use write_timeout::WriteTimeout;
pub mod metrics;
mod probes;
pub use handlers::SyncState;
pub use probes::PROBE_RESERVE;
mod reload;
pub mod tls;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{get, post};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;

use error::ApiError;

use self::auth::Authenticator;
use self::metrics::Metrics;
use self::tls::Tls;

/// Default request body limit: far above the largest sync request Metacontroller sends.
pub const DEFAULT_BODY_LIMIT: usize = 16 * 1024 * 1024;
/// Default per-request timeout, below Metacontroller's 10 s hook timeout.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Default limit on connections open at once: far above what Metacontroller's few workers need,
/// far below the usual descriptor limit.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// Time a client has to send a request's headers (slow clients cannot hold connections).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest read buffer of a connection (hyper's default is ~400 KiB). A request body is read in
/// pieces of at most this size and collected whole for decoding, so it only bounds what an open
/// connection keeps between requests, and with it the peak memory of many connections sending
/// large requests (BENCHMARKS.md).
pub const READ_BUFFER_LIMIT: usize = 64 * 1024;
/// Time a client has to finish the TLS handshake.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Time in-flight requests get to finish after SIGTERM.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(9);

/// Server settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Largest accepted request body in bytes.
    pub body_limit: usize,
    /// Time allowed for one request, body included.
    pub request_timeout: Duration,
    /// Credentials `/sync` and `/customize` require, if any.
    pub auth: Option<Arc<Authenticator>>,
    /// Most connections served at once; [`serve`] answers further connections only for probes
    /// and metrics. At least 1 (0 counts as 1).
    pub max_connections: usize,
    /// The metrics `GET /metrics` reports: requests (counted by [`router`]'s layers) and open
    /// connections (counted by [`serve`]). Clones of a `Config` share them.
    pub metrics: Arc<Metrics>,
    /// How children are built (the reload agent's image, the default images).
    pub options: Arc<crate::Options>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            body_limit: DEFAULT_BODY_LIMIT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            auth: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            metrics: Arc::new(Metrics::default()),
            options: Arc::default(),
        }
    }
}

/// The router with every route and layer.
pub fn router(config: &Config) -> Router {
    let hooks = Router::new()
        .route(
            "/sync",
            post(handlers::sync).with_state(Arc::new(
                handlers::SyncState::new(Arc::clone(&config.options))
                    .with_request_timeout(config.request_timeout),
            )),
        )
        .route(
            "/customize",
            post(handlers::customize).with_state(Arc::clone(&config.options)),
        );
    // Probes stay open; only the hook endpoints need credentials when configured.
    let hooks = match &config.auth {
        Some(auth) => hooks.route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(auth),
            auth::require,
        )),
        None => hooks,
    };
    let registry = Arc::clone(&config.metrics);
    Router::new()
        .merge(hooks)
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::healthz))
        .route(
            "/metrics",
            get(metrics::serve).with_state(Arc::clone(&registry)),
        )
        .fallback(handlers::not_found)
        // Outermost first: a panic becomes a 500 (Metacontroller then changes nothing); every
        // answer, 408 and 413 included, is counted; the timeout bounds slow bodies and the wait
        // for the body's share of the bytes in flight (`budget`, which also answers an announced
        // body over the limit with 413 at once); the `Bytes` extractor enforces the limit on a
        // body of unannounced length.
        .layer((
            CatchPanicLayer::custom(handlers::panic_response),
            axum::middleware::from_fn_with_state(registry, metrics::track),
            TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, config.request_timeout),
            axum::middleware::from_fn_with_state(
                Arc::new(budget::Budget::new(
                    config.body_limit,
                    config.request_timeout,
                )),
                budget::admit,
            ),
            DefaultBodyLimit::max(config.body_limit),
        ))
}

/// Serves the hook's [`router`] for `config` on `listener` (over TLS when `tls` is given) until
/// `shutdown` resolves, then stops accepting and gives in-flight requests [`SHUTDOWN_GRACE`] to
/// finish.
///
/// Every connection gets [`HEADER_READ_TIMEOUT`] to send its headers and, with TLS,
/// [`TLS_HANDSHAKE_TIMEOUT`] for the handshake, and is closed when its client stops reading an
/// answer for [`WRITE_TIMEOUT`], so slow clients cannot pin the server. At most
/// `config.max_connections` connections are served at once, counted in `config.metrics`;
/// beyond that, connections go to a small reserve that answers only probes and metrics
/// ([`PROBE_RESERVE`], oldest closed first), so the kubelet's probes are answered whatever the
/// clients do.
///
/// # Errors
/// None today; the signature keeps room for listener errors.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<Tls>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    config: &Config,
) -> io::Result<()> {
    serve_router(listener, router(config), tls, shutdown, config).await
}

/// [`serve`] with another router: for the echo baseline of the load benchmark, which must run
/// on the same stack. `config` gives the connection settings and the metrics.
///
/// # Errors
/// None today; the signature keeps room for listener errors.
pub async fn serve_router(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<Tls>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    config: &Config,
) -> io::Result<()> {
    // HTTP/1.1 only: Metacontroller's client speaks it, and an HTTP/2 connection that never sends
    // a request could otherwise stay open for ever.
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(READ_BUFFER_LIMIT);
    let mut probe_builder = builder.clone();
    probe_builder.keep_alive(false);
    let probe_router = probes::router(&config.metrics);
    let mut reserve = probes::Reserve::default();
    let graceful = GracefulShutdown::new();
    // Tells connections still waiting for their first byte to give up at shutdown.
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let mut slots = Slots::new(config.max_connections);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            stream = accept(&listener) => stream,
            () = &mut shutdown => break,
        };
        let Some(stream) = stream else { continue };
        let (router, builder, permit) = match slots.try_acquire() {
            Some(permit) => (&router, &builder, Some(permit)),
            // At the limit: a probe-only connection in the reserve.
            None => (&probe_router, &probe_builder, None),
        };
        let connection = Connection {
            service: TowerToHyperService::new(router.clone()),
            builder: builder.clone(),
            watcher: graceful.watcher(),
            stop: stop.clone(),
            acceptor: tls.as_ref().map(|t| TlsAcceptor::from(t.current())),
        };
        let Some(permit) = permit else {
            let task = tokio::spawn(serve_connection(stream, connection));
            reserve.admit(task.abort_handle());
            continue;
        };
        // Released when the task ends, however it ends: a tuple drops its fields in order, so the
        // gauge goes down before the permit lets the next connection in.
        let slot = (config.metrics.connection_opened(), permit);
        tokio::spawn(async move {
            let _slot = slot;
            serve_connection(stream, connection).await;
        });
    }
    drop(listener);
    let _ = stopping.send(true);
    let finished = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
    if finished.is_err() {
        tracing::warn!("{GRACE_EXCEEDED}");
    }
    Ok(())
}

const GRACE_EXCEEDED: &str = "in-flight requests did not finish within the shutdown grace period";
const LIMIT_REACHED: &str =
    "connection limit reached; new connections are answered only for probes";
const LIMIT_LEFT: &str = "below the connection limit again";

/// The connection permits, with a warning once per episode at the limit.
struct Slots {
    /// One permit per open connection; only the accept loop takes permits.
    semaphore: Arc<Semaphore>,
    max_connections: usize,
    /// Free permits that end an episode: a tenth (at least one), so hovering at the limit does
    /// not log.
    rearm: usize,
    at_limit: bool,
}

impl Slots {
    fn new(max_connections: usize) -> Self {
        let max_connections = max_connections.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            semaphore: Arc::new(Semaphore::new(max_connections)),
            max_connections,
            rearm: (max_connections / 10).max(1),
            at_limit: false,
        }
    }

    /// A free permit, if any; logs when the limit is reached and when it is left.
    fn try_acquire(&mut self) -> Option<OwnedSemaphorePermit> {
        let permit = Arc::clone(&self.semaphore).try_acquire_owned().ok();
        let free = self.semaphore.available_permits();
        let max_connections = self.max_connections;
        if permit.is_none() && !self.at_limit {
            self.at_limit = true;
            tracing::warn!(max_connections, "{LIMIT_REACHED}");
        } else if free >= self.rearm && self.at_limit {
            self.at_limit = false;
            tracing::info!(max_connections, "{LIMIT_LEFT}");
        }
        permit
    }
}

/// The next connection; `None` after a failed `accept` (out of descriptors and the like), after
/// a short back-off instead of spinning.
async fn accept(listener: &TcpListener) -> Option<TcpStream> {
    match listener.accept().await {
        Ok((stream, _)) => Some(stream),
        Err(error) => {
            tracing::warn!(%error, "accept failed");
            tokio::time::sleep(Duration::from_millis(50)).await;
            None
        }
    }
}

/// What one connection needs from the server.
struct Connection {
    service: TowerToHyperService<Router>,
    builder: http1::Builder,
    watcher: Watcher,
    stop: tokio::sync::watch::Receiver<bool>,
    acceptor: Option<TlsAcceptor>,
}

/// Serves one accepted connection: plaintext once its first byte arrives, or TLS after the
/// handshake, each within its timeout; gives up at shutdown while still waiting.
async fn serve_connection(stream: TcpStream, c: Connection) {
    let Connection {
        service,
        builder,
        watcher,
        mut stop,
        acceptor,
    } = c;
    let result = match acceptor {
        None => {
            // The header timer starts with the first byte: a client that sends nothing is
            // dropped after the same time.
            let mut first = [0u8; 1];
            let peek = tokio::time::timeout(HEADER_READ_TIMEOUT, stream.peek(&mut first));
            tokio::select! {
                peeked = peek => if !matches!(peeked, Ok(Ok(n)) if n > 0) {
                    return;
                },
                _ = stop.wait_for(|stopping| *stopping) => return,
            }
            let stream = WriteTimeout::new(stream, WRITE_TIMEOUT);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            watcher.watch(connection).await
        }
        Some(acceptor) => {
            let stream = WriteTimeout::new(stream, WRITE_TIMEOUT);
            match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => {
                    let connection = builder.serve_connection(TokioIo::new(stream), service);
                    watcher.watch(connection).await
                }
                Ok(Err(error)) => return tracing::debug!(%error, "TLS handshake failed"),
                Err(_) => return tracing::debug!("TLS handshake timed out"),
            }
        }
    };
    if let Err(error) = result {
        tracing::debug!(%error, "connection ended with an error");
    }
}
