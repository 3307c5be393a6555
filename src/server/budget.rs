//! Bytes in flight: what a request may hold of the process's memory while it is read and
//! answered.
//!
//! A request's body, and what decoding, syncing and encoding build from it, is held from the
//! first byte to the answer. Before its body is read, a request takes one permit per KiB of its
//! `Content-Length` (of the body limit, when its length is not announced) from a semaphore of
//! [`BODIES_IN_FLIGHT`] × the body limit, and holds it until it is answered, and a sync until it
//! has finished even past its deadline. So whatever the number of connections, at most that many
//! body bytes are in flight; further requests wait for permits within their request timeout
//! (then 408), and a body announced over the limit gets 413 at once, before any byte of it is
//! read (and without `100 Continue` to a client that asked with `Expect`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::HttpBody as _;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::ApiError;

/// Largest request bodies in flight at once: the semaphore holds this many body limits.
pub const BODIES_IN_FLIGHT: usize = 2;

/// Bytes per permit.
const PERMIT_BYTES: u64 = 1024;

/// The semaphore of body bytes, and what a request is told.
pub struct Budget {
    semaphore: Arc<Semaphore>,
    body_limit: u64,
    request_timeout: Duration,
}

/// The permits a request holds, shared with its sync (which may outlive the answer).
#[derive(Clone)]
pub struct Held(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// When the request's time runs out: its start plus the request timeout.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(pub Instant);

impl Budget {
    /// The budget for `body_limit`-byte bodies answered within `request_timeout`.
    #[must_use]
    pub fn new(body_limit: usize, request_timeout: Duration) -> Self {
        let body_limit = u64::try_from(body_limit).unwrap_or(u64::MAX);
        let total = permits(body_limit.saturating_mul(BODIES_IN_FLIGHT as u64));
        Self {
            semaphore: Arc::new(Semaphore::new(total as usize)),
            body_limit,
            request_timeout,
        }
    }
}

/// Permits for `bytes`, at most what a semaphore holds.
fn permits(bytes: u64) -> u32 {
    let max = u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX);
    u32::try_from(bytes.div_ceil(PERMIT_BYTES))
        .unwrap_or(u32::MAX)
        .min(max)
}

/// The middleware: 413 for an announced body over the limit, otherwise the request waits for
/// the permits of its body, then runs holding them, with its [`Deadline`].
pub async fn admit(
    State(budget): State<Arc<Budget>>,
    mut request: Request,
    next: Next,
) -> Response {
    let deadline = Deadline(Instant::now() + budget.request_timeout);
    let hint = request.body().size_hint();
    let bytes = match hint.upper() {
        Some(exact) if exact == hint.lower() => exact,
        _ => budget.body_limit,
    };
    if bytes > budget.body_limit {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request body of {bytes} bytes is over the limit of {} bytes",
                budget.body_limit
            ),
            None,
        )
        .into_response();
    }
    request.extensions_mut().insert(deadline);
    let wanted = permits(bytes);
    if wanted == 0 {
        return next.run(request).await;
    }
    let Ok(permit) = Arc::clone(&budget.semaphore)
        .acquire_many_owned(wanted)
        .await
    else {
        return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting down", None)
            .into_response();
    };
    request.extensions_mut().insert(Held(Arc::new(permit)));
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_round_up_and_saturate() {
        assert_eq!(permits(0), 0);
        assert_eq!(permits(1), 1);
        assert_eq!(permits(1024), 1);
        assert_eq!(permits(1025), 2);
        assert_eq!(
            permits(u64::MAX) as usize,
            Semaphore::MAX_PERMITS.min(u32::MAX as usize)
        );
    }
}
