//! What the agent's reload outcomes say as the Pod condition `memcached.c5c3.io/SecretReload`:
//! the latest outcome of each watched group decides the condition, which the writer
//! (`pod_condition.rs`) puts on the Pod off the reload path.

use std::fmt::Display;
use std::sync::Arc;

use tokio::sync::watch;

use super::{Metrics, What};

/// The condition's `type` on the agent's Pod. The hook reads it from the related Pods under
/// the same definition.
pub use crate::hook::RELOAD_CONDITION as CONDITION_TYPE;
/// Longest condition message, in bytes.
pub const MAX_MESSAGE: usize = 1024;

/// The condition as the agent wants it on its Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    /// `True` or `False`.
    pub status: &'static str,
    /// `Reloaded` or `ReloadFailed`.
    pub reason: &'static str,
    /// What memcached took, or which group failed and why.
    pub message: String,
}

/// What became of the latest content of one group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Latest {
    /// The group is not watched: it does not count.
    #[default]
    Unwatched,
    /// Not delivered yet (the agent's first delivery waits for memcached).
    Pending,
    /// memcached took it.
    Delivered,
    /// Refused, or its delivery failed: the error.
    Failed(String),
}

/// The latest outcome of each watched group.
#[derive(Debug, Default)]
pub struct Outcomes {
    tls: Latest,
    auth: Latest,
}

impl Outcomes {
    /// The groups watched: only those decide the condition.
    #[must_use]
    pub fn new(tls: bool, auth: bool) -> Self {
        let of = |watched: bool| {
            if watched {
                Latest::Pending
            } else {
                Latest::Unwatched
            }
        };
        Self {
            tls: of(tls),
            auth: of(auth),
        }
    }

    /// Records the outcome of the latest content of `what`.
    pub fn record(&mut self, what: What, result: Result<(), String>) {
        let latest = match result {
            Ok(()) => Latest::Delivered,
            Err(e) => Latest::Failed(e),
        };
        match what {
            What::Tls => self.tls = latest,
            What::Auth => self.auth = latest,
            // The proxy's routes are no Secret: not part of the condition (--pod-condition
            // is refused in proxy mode).
            What::Routes => {}
        }
    }

    /// The condition the outcomes call for: False while the latest content of any group failed,
    /// True once every watched group's latest content was delivered, none before that.
    #[must_use]
    pub fn desired(&self) -> Option<Desired> {
        let groups = [(What::Tls, &self.tls), (What::Auth, &self.auth)];
        let watched = || groups.iter().filter(|(_, l)| **l != Latest::Unwatched);
        let failures: Vec<String> = watched()
            .filter_map(|(w, l)| match l {
                Latest::Failed(e) => Some(format!("{}: {e}", w.label())),
                _ => None,
            })
            .collect();
        if !failures.is_empty() {
            return Some(Desired {
                status: "False",
                reason: "ReloadFailed",
                message: bounded(&failures.join("; "), MAX_MESSAGE).to_owned(),
            });
        }
        if watched().next().is_none() || watched().any(|(_, l)| **l == Latest::Pending) {
            return None;
        }
        let names: Vec<&str> = watched().map(|(w, _)| w.label()).collect();
        Some(Desired {
            status: "True",
            reason: "Reloaded",
            message: format!("memcached took the mounted Secret ({})", names.join(", ")),
        })
    }
}

pub use crate::api::bounds::cut as bounded;

/// Where each reload outcome goes: the counters, and with `--pod-condition` the condition the
/// writer puts on the Pod. Publishing never waits: the writer takes the latest value when it can.
#[derive(Debug)]
pub struct Report {
    metrics: Arc<Metrics>,
    outcomes: Outcomes,
    condition: Option<watch::Sender<Option<Desired>>>,
}

impl Report {
    /// Counts outcomes in `metrics`; `condition` receives the desired condition after each one.
    #[must_use]
    pub fn new(
        metrics: Arc<Metrics>,
        outcomes: Outcomes,
        condition: Option<watch::Sender<Option<Desired>>>,
    ) -> Self {
        Self {
            metrics,
            outcomes,
            condition,
        }
    }

    /// One reload outcome of `what`: success, or the error the log line has.
    pub fn outcome(&mut self, what: What, result: Result<(), &dyn Display>) {
        self.metrics.record(what, result.is_ok());
        let Some(condition) = &self.condition else {
            return;
        };
        self.outcomes
            .record(what, result.map_err(ToString::to_string));
        let desired = self.outcomes.desired();
        condition.send_if_modified(|current| {
            let changed = *current != desired;
            if changed {
                current.clone_from(&desired);
            }
            changed
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(o: &Outcomes) -> String {
        o.desired().map_or_else(
            || "(none)".to_owned(),
            |d| format!("{} {}: {}", d.status, d.reason, d.message),
        )
    }

    /// The condition after each outcome, for both groups watched.
    #[test]
    fn condition_follows_the_latest_outcome_of_each_group() {
        let mut o = Outcomes::new(true, true);
        let mut steps = vec![format!("start: {}", show(&o))];
        let mut step = |o: &mut Outcomes, label: &str, what, result: Result<(), &str>| {
            o.record(what, result.map_err(str::to_owned));
            steps.push(format!("{label}: {}", show(o)));
        };
        step(&mut o, "tls delivered", What::Tls, Ok(()));
        step(&mut o, "auth delivered", What::Auth, Ok(()));
        step(
            &mut o,
            "tls refused",
            What::Tls,
            Err("the key does not match the certificate"),
        );
        step(
            &mut o,
            "auth failed too",
            What::Auth,
            Err("memcached refused the agent's login (ERROR)"),
        );
        step(&mut o, "auth delivered", What::Auth, Ok(()));
        step(&mut o, "new tls delivered", What::Tls, Ok(()));
        insta::assert_snapshot!(steps.join("\n"), @r"
        start: (none)
        tls delivered: (none)
        auth delivered: True Reloaded: memcached took the mounted Secret (tls, auth)
        tls refused: False ReloadFailed: tls: the key does not match the certificate
        auth failed too: False ReloadFailed: tls: the key does not match the certificate; auth: memcached refused the agent's login (ERROR)
        auth delivered: False ReloadFailed: tls: the key does not match the certificate
        new tls delivered: True Reloaded: memcached took the mounted Secret (tls, auth)
        ");
    }

    #[test]
    fn a_failure_before_the_first_delivery_of_the_other_group_is_reported() {
        let mut o = Outcomes::new(true, true);
        o.record(What::Auth, Err("no memcached process".into()));
        assert_eq!(show(&o), "False ReloadFailed: auth: no memcached process");
        let mut only_tls = Outcomes::new(true, false);
        assert_eq!(show(&only_tls), "(none)");
        only_tls.record(What::Tls, Ok(()));
        assert_eq!(
            show(&only_tls),
            "True Reloaded: memcached took the mounted Secret (tls)"
        );
        assert_eq!(show(&Outcomes::new(false, false)), "(none)");
    }

    #[test]
    fn messages_are_bounded_on_a_char_boundary() {
        let mut o = Outcomes::new(true, false);
        o.record(What::Tls, Err("é".repeat(MAX_MESSAGE)));
        let message = o.desired().unwrap().message;
        assert_eq!(
            message.len(),
            MAX_MESSAGE - 1,
            "5 + 2k bytes: cut before a split é"
        );
        assert!(message.starts_with("tls: éé"));
        assert_eq!(bounded("abc", 3), "abc");
        assert_eq!(bounded("abc", 2), "ab");
        assert_eq!(bounded("aé", 2), "a");
        assert_eq!(bounded("", 0), "");
    }

    #[test]
    fn the_writer_sees_only_changes() {
        let (tx, mut rx) = watch::channel(None);
        let mut report = Report::new(
            Arc::new(Metrics::default()),
            Outcomes::new(true, false),
            Some(tx),
        );
        report.outcome(What::Tls, Ok(()));
        assert!(rx.has_changed().unwrap());
        assert_eq!(rx.borrow_and_update().as_ref().unwrap().reason, "Reloaded");
        report.outcome(What::Tls, Ok(()));
        assert!(
            !rx.has_changed().unwrap(),
            "the same condition again: no write"
        );
        report.outcome(What::Tls, Err(&"bad key"));
        assert_eq!(
            rx.borrow_and_update().as_ref().unwrap().message,
            "tls: bad key"
        );
    }
}
