//! The agent's reload counters on `GET /metrics`, with prometheus-client.

use std::sync::Arc;
use std::time::SystemTime;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::process::METRICS_CONTENT_TYPE;

/// What was reloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// The TLS certificate and key.
    Tls,
    /// The `-Y` auth file.
    Auth,
    /// The route configuration of memcached's proxy (proxy mode).
    Routes,
}

impl What {
    const ALL: [Self; 3] = [Self::Tls, Self::Auth, Self::Routes];
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Tls => "tls",
            Self::Auth => "auth",
            Self::Routes => "routes",
        }
    }
}

/// Reload outcomes, served in the OpenMetrics text format (prometheus-client, as the hook's own
/// `/metrics`). Every series exists from the start, at 0.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reloads: Family<ReloadLabels, Counter>,
    last_success: Family<MaterialLabels, Gauge>,
    condition_writes: Family<ResultLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    what: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

impl ResultLabels {
    fn of(ok: bool) -> Self {
        Self {
            result: outcome(ok),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MaterialLabels {
    what: &'static str,
}

const RELOADS: (&str, &str) = (
    "memcached_reload_agent_reloads",
    "Reloads the agent asked memcached for, by material and outcome",
);
const LAST_SUCCESS: (&str, &str) = (
    "memcached_reload_agent_last_success_timestamp_seconds",
    "When memcached last took new material (0: never)",
);
const CONDITION_WRITES: (&str, &str) = (
    "memcached_reload_agent_condition_writes",
    "Writes of the pod condition memcached.c5c3.io/SecretReload (--pod-condition), by result",
);

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let reloads = Family::<ReloadLabels, Counter>::default();
        let last_success = Family::<MaterialLabels, Gauge>::default();
        registry.register(RELOADS.0, RELOADS.1, reloads.clone());
        registry.register(LAST_SUCCESS.0, LAST_SUCCESS.1, last_success.clone());
        let condition_writes = Family::<ResultLabels, Counter>::default();
        registry.register(
            CONDITION_WRITES.0,
            CONDITION_WRITES.1,
            condition_writes.clone(),
        );
        for ok in [true, false] {
            drop(condition_writes.get_or_create(&ResultLabels::of(ok)));
        }
        for what in What::ALL {
            for ok in [true, false] {
                drop(reloads.get_or_create(&ReloadLabels::of(what, ok)));
            }
            drop(last_success.get_or_create(&MaterialLabels { what: what.label() }));
        }
        Self {
            registry,
            reloads,
            last_success,
            condition_writes,
        }
    }
}

impl ReloadLabels {
    fn of(what: What, ok: bool) -> Self {
        Self {
            what: what.label(),
            outcome: outcome(ok),
        }
    }
}

/// The label value of a success or a failure.
fn outcome(ok: bool) -> &'static str {
    if ok { "success" } else { "failure" }
}

impl Metrics {
    pub(super) fn record(&self, what: What, ok: bool) {
        self.reloads
            .get_or_create(&ReloadLabels::of(what, ok))
            .inc();
        if ok {
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let labels = MaterialLabels { what: what.label() };
            self.last_success
                .get_or_create(&labels)
                .set(i64::try_from(now).unwrap_or(i64::MAX));
        }
    }

    pub(super) fn record_condition_write(&self, ok: bool) {
        self.condition_writes
            .get_or_create(&ResultLabels::of(ok))
            .inc();
    }

    /// Count of successful and failed writes of the pod condition.
    #[must_use]
    pub fn condition_writes(&self) -> (u64, u64) {
        let count = |ok| {
            self.condition_writes
                .get_or_create(&ResultLabels::of(ok))
                .get()
        };
        (count(true), count(false))
    }

    /// Count of successes and failures for `what`.
    #[must_use]
    pub fn counts(&self, what: What) -> (u64, u64) {
        let count = |ok| {
            self.reloads
                .get_or_create(&ReloadLabels::of(what, ok))
                .get()
        };
        (count(true), count(false))
    }

    /// The OpenMetrics text exposition.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// `GET /metrics` (the reload counters) and `GET /healthz`.
pub(super) fn metrics_router(metrics: Arc<Metrics>) -> axum::Router {
    let text = move || {
        let m = Arc::clone(&metrics);
        async move {
            let content_type = (axum::http::header::CONTENT_TYPE, METRICS_CONTENT_TYPE);
            ([content_type], m.render())
        }
    };
    axum::Router::new()
        .route("/metrics", axum::routing::get(text))
        .route("/healthz", axum::routing::get(|| async { "ok" }))
}
