//! The HTTP server: `POST /sync`, `POST /customize`, `GET /healthz`, `GET /readyz`.
//!
//! A thin shell around [`crate::sync`]: it checks the content type, answers a matching
//! `If-None-Match` with 304 before decoding, decodes the body, calls the pure function and
//! encodes the answer. Malformed input gets a 4xx with a JSON body; nothing ever answers 200
//! to a request it could not understand.

mod error;
mod handlers;

use std::future::Future;
use std::io;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;

pub use error::ApiError;

/// Default request body limit: far above the largest sync request Metacontroller sends.
pub const DEFAULT_BODY_LIMIT: usize = 16 * 1024 * 1024;
/// Default per-request timeout, below Metacontroller's 10 s hook timeout.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Server settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Largest accepted request body in bytes.
    pub body_limit: usize,
    /// Time allowed for one request, body included.
    pub request_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            body_limit: DEFAULT_BODY_LIMIT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

/// The router with every route and layer.
pub fn router(config: &Config) -> Router {
    Router::new()
        .route("/sync", post(handlers::sync))
        .route("/customize", post(handlers::customize))
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::healthz))
        .fallback(handlers::not_found)
        // Outermost first: a panic becomes a 500 (Metacontroller then changes nothing); the
        // timeout bounds slow bodies; the body limit is enforced by the `Bytes` extractor.
        .layer((
            CatchPanicLayer::custom(handlers::panic_response),
            TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, config.request_timeout),
            DefaultBodyLimit::max(config.body_limit),
        ))
}

/// Serves `router` on `listener` until `shutdown` resolves, then finishes in-flight requests.
///
/// # Errors
/// I/O errors of the listener.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received, finishing in-flight requests"),
        () = terminate => tracing::info!("SIGTERM received, finishing in-flight requests"),
    }
}
