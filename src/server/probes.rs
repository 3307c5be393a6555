//! Probes at the connection limit.
//!
//! When every one of `--max-connections` slots is held, the server still accepts connections
//! into a small reserve of [`PROBE_RESERVE`] that answers only `GET /healthz`, `GET /readyz`
//! and `GET /metrics`, one request per connection; any other request there gets 503 (which
//! Metacontroller retries). When the reserve is full, its oldest connection is closed to make
//! room, so clients that hold connections open, however many, cannot keep the kubelet's probe
//! from being answered: only one that opens connections faster than a probe is answered could.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use tokio::task::AbortHandle;

use super::metrics::{self, Metrics};
use super::{ApiError, handlers};

/// Connections beyond the limit served for probes at once.
pub const PROBE_RESERVE: usize = 8;

/// The routes of a reserve connection.
pub fn router(registry: &Arc<Metrics>) -> Router {
    Router::new()
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::healthz))
        .route(
            "/metrics",
            get(metrics::serve).with_state(Arc::clone(registry)),
        )
        .fallback(at_limit)
}

/// Any other request on a reserve connection.
async fn at_limit() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "connection limit reached; retry later",
        None,
    )
}

/// The reserve's open connections, oldest first.
#[derive(Default)]
pub struct Reserve(VecDeque<AbortHandle>);

impl Reserve {
    /// Counts in the connection served by `task`, closing the oldest one if the reserve is full.
    pub fn admit(&mut self, task: AbortHandle) {
        self.0.retain(|t| !t.is_finished());
        if self.0.len() >= PROBE_RESERVE
            && let Some(oldest) = self.0.pop_front()
        {
            oldest.abort();
        }
        self.0.push_back(task);
    }
}
