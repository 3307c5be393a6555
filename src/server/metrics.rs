//! Prometheus metrics of the hook itself, with `prometheus-client`: fixed label sets (route,
//! status code, sync outcome), a latency histogram per route, rendered in the OpenMetrics text
//! format on `GET /metrics`.
//!
//! The open-connections gauge is moved by the accept loop ([`super::serve`]), not by the
//! middleware, so requests never touch it.
//!
//! Labels are the route and the status code only: never a parent name (unbounded) and never
//! anything from a request body or a header.

use crate::process::METRICS_CONTENT_TYPE;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Routes with their own series; anything else counts as `other`.
const ROUTES: [&str; 6] = [
    "/sync",
    "/customize",
    "/healthz",
    "/readyz",
    "/metrics",
    "other",
];
/// Status codes with their own series (as numbers and as labels); anything else is `other`.
const CODES: [(u16, &str); 11] = [
    (200, "200"),
    (304, "304"),
    (400, "400"),
    (401, "401"),
    (404, "404"),
    (405, "405"),
    (408, "408"),
    (413, "413"),
    (415, "415"),
    (422, "422"),
    (500, "500"),
];
/// Histogram bucket upper bounds, in seconds.
const BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5, 10.0,
];
/// Name and help of each metric (`prometheus-client` adds `_total` to counters).
const REQUESTS: (&str, &str) = (
    "memcached_hook_http_requests",
    "HTTP requests by route and status code",
);
const LATENCY: (&str, &str) = (
    "memcached_hook_http_request_duration_seconds",
    "Time from request to response, by route",
);
const OUTCOMES: (&str, &str) = ("memcached_hook_sync_outcomes", "What /sync calls ended as");
const OPEN: (&str, &str) = (
    "memcached_hook_open_connections",
    "Connections the server has open now",
);

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

impl SyncOutcome {
    const ALL: [Self; 4] = [
        Self::Synced,
        Self::KeptInvalid,
        Self::NotModified,
        Self::Rejected,
    ];

    fn label(self) -> &'static str {
        match self {
            Self::Synced => "synced",
            Self::KeptInvalid => "kept_invalid",
            Self::NotModified => "not_modified",
            Self::Rejected => "rejected",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The hook's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    outcomes: Family<OutcomeLabels, Counter>,
    open_connections: Gauge<i64, AtomicI64>,
}

impl Default for Metrics {
    fn default() -> Self {
        let requests = Family::default();
        let latency = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        let outcomes = Family::default();
        let open_connections = Gauge::default();
        // Every route's histogram and every outcome from the start, at zero.
        for route in ROUTES {
            drop(latency.get_or_create(&RouteLabels { route }));
        }
        for outcome in SyncOutcome::ALL {
            drop(outcomes.get_or_create(&OutcomeLabels {
                outcome: outcome.label(),
            }));
        }
        let mut registry = Registry::default();
        registry.register(REQUESTS.0, REQUESTS.1, requests.clone());
        registry.register(LATENCY.0, LATENCY.1, latency.clone());
        registry.register(OUTCOMES.0, OUTCOMES.1, outcomes.clone());
        registry.register(OPEN.0, OPEN.1, open_connections.clone());
        Self {
            registry,
            requests,
            latency,
            outcomes,
            open_connections,
        }
    }
}

/// One open connection, counted in `memcached_hook_open_connections` until it is dropped.
#[derive(Debug)]
pub(crate) struct OpenConnection(Arc<Metrics>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open_connections.dec();
    }
}

fn route_label(path: &str) -> &'static str {
    ROUTES.iter().find(|r| **r == path).map_or("other", |r| r)
}

fn code_label(code: u16) -> &'static str {
    CODES
        .iter()
        .find(|(number, _)| *number == code)
        .map_or("other", |(_, label)| label)
}

impl Metrics {
    /// Counts a newly accepted connection as open until the returned guard is dropped.
    pub(crate) fn connection_opened(self: &Arc<Self>) -> OpenConnection {
        self.open_connections.inc();
        OpenConnection(Arc::clone(self))
    }

    /// Connections open now (accepted and not yet closed).
    #[must_use]
    pub fn open_connections(&self) -> u64 {
        u64::try_from(self.open_connections.get()).unwrap_or(0)
    }

    fn record(&self, route: &'static str, code: u16, seconds: f64, outcome: Option<SyncOutcome>) {
        let code = code_label(code);
        self.requests
            .get_or_create(&RequestLabels { route, code })
            .inc();
        self.latency
            .get_or_create(&RouteLabels { route })
            .observe(seconds);
        if let Some(outcome) = outcome {
            let labels = OutcomeLabels {
                outcome: outcome.label(),
            };
            self.outcomes.get_or_create(&labels).inc();
        }
    }

    /// The OpenMetrics text exposition of every series.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8192);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Middleware: counts every request by route and code, and times it.
pub async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = route_label(
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
        started.elapsed().as_secs_f64(),
        outcome,
    );
    response
}

/// `GET /metrics`.
pub async fn serve(State(metrics): State<Arc<Metrics>>) -> Response {
    (
        [(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)],
        metrics.render(),
    )
        .into_response()
}
