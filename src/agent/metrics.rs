//! The agent's reload counters, served in the Prometheus text format on `GET /metrics`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

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
    pub(super) fn label(self) -> &'static str {
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
    pub(super) fn record(&self, what: What, ok: bool) {
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

/// `GET /metrics` (the reload counters) and `GET /healthz`.
pub(super) fn metrics_router(metrics: Arc<Metrics>) -> axum::Router {
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
