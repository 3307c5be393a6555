//! Prometheus metrics of the hook itself, lock-free: fixed label sets, atomic counters, and a
//! latency histogram per route, rendered in the Prometheus text format on `GET /metrics`.
//!
//! The open-connections gauge is moved by the accept loop ([`super::serve`]), not by the
//! middleware, so requests never touch it.
//!
//! Labels are the route and the status code only: never a parent name (unbounded) and never
//! anything from a request body or a header.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Routes with their own series; anything else counts as `other`.
const ROUTES: [&str; 6] = [
    "/sync",
    "/customize",
    "/healthz",
    "/readyz",
    "/metrics",
    "other",
];
/// Status codes with their own series; anything else counts as `other`.
const CODES: [u16; 12] = [200, 304, 400, 401, 404, 405, 408, 413, 415, 422, 500, 0];
/// Histogram bucket upper bounds, in seconds.
const BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5, 10.0,
];

/// What a `/sync` call ended as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOutcome {
    /// Desired children and status computed from a valid spec.
    Synced,
    /// Invalid spec: observed children kept, `Degraded/InvalidSpec`.
    KeptInvalid,
    /// Unchanged request answered 304 before decoding.
    NotModified,
    /// Malformed request or invalid spec with nothing to keep: a 4xx.
    Rejected,
}

const OUTCOMES: [(SyncOutcome, &str); 4] = [
    (SyncOutcome::Synced, "synced"),
    (SyncOutcome::KeptInvalid, "kept_invalid"),
    (SyncOutcome::NotModified, "not_modified"),
    (SyncOutcome::Rejected, "rejected"),
];

struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Self {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
        }
    }

    fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// The hook's metrics.
pub struct Metrics {
    requests: [[AtomicU64; CODES.len()]; ROUTES.len()],
    latency: [Histogram; ROUTES.len()],
    outcomes: [AtomicU64; OUTCOMES.len()],
    open_connections: AtomicU64,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            latency: std::array::from_fn(|_| Histogram::new()),
            outcomes: std::array::from_fn(|_| AtomicU64::new(0)),
            open_connections: AtomicU64::new(0),
        }
    }
}

/// One open connection, counted in `memcached_hook_open_connections` until it is dropped.
#[derive(Debug)]
pub(crate) struct OpenConnection(Arc<Metrics>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open_connections.fetch_sub(1, Ordering::Relaxed);
    }
}

fn route_index(path: &str) -> usize {
    ROUTES
        .iter()
        .position(|r| *r == path)
        .unwrap_or(ROUTES.len() - 1)
}

fn code_index(code: u16) -> usize {
    CODES
        .iter()
        .position(|c| *c == code)
        .unwrap_or(CODES.len() - 1)
}

impl Metrics {
    /// Counts a newly accepted connection as open until the returned guard is dropped.
    pub(crate) fn connection_opened(self: &Arc<Self>) -> OpenConnection {
        self.open_connections.fetch_add(1, Ordering::Relaxed);
        OpenConnection(Arc::clone(self))
    }

    /// Connections open now (accepted and not yet closed).
    #[must_use]
    pub fn open_connections(&self) -> u64 {
        self.open_connections.load(Ordering::Relaxed)
    }

    fn record(&self, route: usize, code: u16, elapsed: Duration, outcome: Option<SyncOutcome>) {
        self.requests[route][code_index(code)].fetch_add(1, Ordering::Relaxed);
        self.latency[route].observe(elapsed);
        if let Some(outcome) = outcome
            && let Some(i) = OUTCOMES.iter().position(|(o, _)| *o == outcome)
        {
            self.outcomes[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The Prometheus text exposition of every series.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8192);
        out.push_str(
            "# HELP memcached_hook_http_requests_total HTTP requests by route and status code.\n",
        );
        out.push_str("# TYPE memcached_hook_http_requests_total counter\n");
        for (r, route) in ROUTES.iter().enumerate() {
            for (c, code) in CODES.iter().enumerate() {
                let value = self.requests[r][c].load(Ordering::Relaxed);
                if value > 0 {
                    let code = if *code == 0 {
                        "other".to_owned()
                    } else {
                        code.to_string()
                    };
                    let _ = writeln!(
                        out,
                        "memcached_hook_http_requests_total{{route=\"{route}\",code=\"{code}\"}} {value}"
                    );
                }
            }
        }
        out.push_str("# HELP memcached_hook_http_request_duration_seconds Time from request to response, by route.\n");
        out.push_str("# TYPE memcached_hook_http_request_duration_seconds histogram\n");
        for (r, route) in ROUTES.iter().enumerate() {
            let h = &self.latency[r];
            let mut cumulative = 0;
            for (i, bound) in BUCKETS.iter().enumerate() {
                cumulative += h.buckets[i].load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "memcached_hook_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let count = h.count.load(Ordering::Relaxed);
            #[allow(clippy::cast_precision_loss)]
            let sum = h.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
            let _ = writeln!(
                out,
                "memcached_hook_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(
                out,
                "memcached_hook_http_request_duration_seconds_sum{{route=\"{route}\"}} {sum}"
            );
            let _ = writeln!(
                out,
                "memcached_hook_http_request_duration_seconds_count{{route=\"{route}\"}} {count}"
            );
        }
        out.push_str("# HELP memcached_hook_sync_outcomes_total What /sync calls ended as.\n");
        out.push_str("# TYPE memcached_hook_sync_outcomes_total counter\n");
        for (i, (_, name)) in OUTCOMES.iter().enumerate() {
            let _ = writeln!(
                out,
                "memcached_hook_sync_outcomes_total{{outcome=\"{name}\"}} {}",
                self.outcomes[i].load(Ordering::Relaxed)
            );
        }
        out.push_str(
            "# HELP memcached_hook_open_connections Connections the server has open now.\n",
        );
        out.push_str("# TYPE memcached_hook_open_connections gauge\n");
        let _ = writeln!(
            out,
            "memcached_hook_open_connections {}",
            self.open_connections()
        );
        out
    }
}

/// Middleware: counts every request by route and code, and times it.
pub async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = route_index(
        request
            .extensions()
            .get::<MatchedPath>()
            .map_or("other", MatchedPath::as_str),
    );
    let response = next.run(request).await;
    let outcome = response.extensions().get::<SyncOutcome>().copied();
    metrics.record(
        route,
        response.status().as_u16(),
        started.elapsed(),
        outcome,
    );
    response
}

/// `GET /metrics`.
pub async fn serve(State(metrics): State<Arc<Metrics>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics.render(),
    )
        .into_response()
}
