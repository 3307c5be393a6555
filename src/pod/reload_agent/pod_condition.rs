//! Puts the condition the reload outcomes call for (`condition.rs`) on the agent's own Pod: a
//! strategic-merge PATCH of `pods/status` (conditions merge by `type`, so the kubelet's own are
//! kept). It runs as a task of its own, off the reload path: it writes only when status, reason
//! or message change, retries a failed write with a back-off, and nothing it does reaches
//! memcached or the reloads.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::{Timestamp, Unit};
use tokio::sync::watch;

use super::Metrics;
use super::apiclient::{ApiClient, RequestError};
use super::condition::{CONDITION_TYPE, Desired};
use crate::api::apiserver;

/// The patch type that merges `status.conditions` by `type`.
pub const CONTENT_TYPE: &str = "application/strategic-merge-patch+json";
/// Most intervals between two attempts after repeated failures.
const MAX_BACKOFF_INTERVALS: u32 = 64;

/// The agent's own Pod.
#[derive(Debug, Clone)]
pub struct PodRef {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl PodRef {
    /// The Pod named `name` in `namespace`.
    ///
    /// # Errors
    /// A namespace that is not a DNS-1123 label or a name that is not a DNS-1123 subdomain,
    /// the API server's syntax for them (they go into the URL path).
    pub fn new(namespace: &str, name: &str) -> Result<Self, String> {
        for (what, value, ok) in [
            ("namespace", namespace, apiserver::is_dns_label(namespace)),
            ("name", name, apiserver::is_dns_subdomain(name)),
        ] {
            if !ok {
                return Err(format!(
                    "pod {what} {value:?} is not a Kubernetes object name"
                ));
            }
        }
        Ok(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })
    }

    /// The `pods/status` subresource's path.
    #[must_use]
    pub fn status_path(&self) -> String {
        format!(
            "/api/v1/namespaces/{}/pods/{}/status",
            self.namespace, self.name
        )
    }
}

/// The PATCH body that sets the condition.
#[must_use]
pub fn patch_body(desired: &Desired, last_transition: &str) -> String {
    serde_json::json!({
        "status": {
            "conditions": [{
                "type": CONDITION_TYPE,
                "status": desired.status,
                "reason": desired.reason,
                "message": desired.message,
                "lastTransitionTime": last_transition,
            }]
        }
    })
    .to_string()
}

/// The wait before the next attempt after `failures` failed writes in a row.
#[must_use]
pub fn backoff(interval: Duration, failures: u32) -> Duration {
    let intervals = 1u32 << failures.min(6);
    interval * intervals.min(MAX_BACKOFF_INTERVALS)
}

/// What the writer last put on the Pod.
#[derive(Debug, Default)]
struct Written {
    condition: Option<Desired>,
    last_transition: String,
}

impl Written {
    /// `lastTransitionTime` for `desired`: now when its status differs from the written one
    /// (or nothing was written by this agent yet), else the written time.
    fn transition_for(&self, desired: &Desired, now: Timestamp) -> String {
        match &self.condition {
            Some(c) if c.status == desired.status => self.last_transition.clone(),
            _ => now
                .round(Unit::Second)
                .unwrap_or(now)
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string(),
        }
    }
}

/// Writes the condition the agent's outcomes call for onto its Pod.
#[derive(Debug)]
pub struct Writer {
    /// The API server.
    pub client: ApiClient,
    /// The agent's Pod.
    pub pod: PodRef,
    /// Counts writes by result.
    pub metrics: Arc<Metrics>,
    /// The agent's poll interval: the unit of the back-off.
    pub interval: Duration,
}

impl Writer {
    /// Runs until the sending side is dropped: every change of the desired condition is
    /// written; a failed write is retried (with the latest desired condition) after a back-off.
    pub async fn run(self, mut desired: watch::Receiver<Option<Desired>>) {
        let mut written = Written::default();
        let mut failures = 0u32;
        loop {
            let want = desired.borrow_and_update().clone();
            if let Some(want) = want.filter(|w| written.condition.as_ref() != Some(w)) {
                match self.write(&want, &mut written).await {
                    Ok(()) => failures = 0,
                    Err(e) => {
                        failures = failures.saturating_add(1);
                        let retry_in = backoff(self.interval, failures);
                        tracing::warn!(error = %e, retry_in_seconds = retry_in.as_secs(), "cannot set the pod condition {CONDITION_TYPE}; memcached and the reloads are not affected");
                        tokio::time::sleep(retry_in).await;
                        continue;
                    }
                }
            }
            if desired.changed().await.is_err() {
                return;
            }
        }
    }

    async fn write(&self, want: &Desired, written: &mut Written) -> Result<(), RequestError> {
        let last_transition = written.transition_for(want, Timestamp::now());
        let body = patch_body(want, &last_transition);
        let result = self
            .client
            .patch(&self.pod.status_path(), CONTENT_TYPE, body)
            .await;
        self.metrics.record_condition_write(result.is_ok());
        result?;
        tracing::info!(
            status = want.status,
            reason = want.reason,
            condition_message = %want.message,
            "pod condition {CONDITION_TYPE} set"
        );
        written.condition = Some(want.clone());
        written.last_transition = last_transition;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(status: &'static str) -> Desired {
        Desired {
            status,
            reason: if status == "True" {
                "Reloaded"
            } else {
                "ReloadFailed"
            },
            message: "tls: \"quoted\" error".into(),
        }
    }

    #[test]
    fn the_patch_sets_only_the_agents_condition() {
        let body = patch_body(&desired("False"), "2026-11-26T07:30:00Z");
        let value: serde_json::Value = serde_json::from_str(&body).unwrap();
        insta::assert_json_snapshot!(value, @r#"
        {
          "status": {
            "conditions": [
              {
                "lastTransitionTime": "2026-11-26T07:30:00Z",
                "message": "tls: \"quoted\" error",
                "reason": "ReloadFailed",
                "status": "False",
                "type": "memcached.c5c3.io/SecretReload"
              }
            ]
          }
        }
        "#);
    }

    #[test]
    fn the_hook_reads_the_condition_the_agent_writes() {
        use crate::hook::{RelatedObject, ReloadReport};
        let body = patch_body(&desired("False"), "2026-11-26T07:30:00Z");
        let mut pod: serde_json::Value = serde_json::from_str(&body).unwrap();
        pod["apiVersion"] = "v1".into();
        pod["kind"] = "Pod".into();
        pod["metadata"] = serde_json::json!({"name": "c-0", "namespace": "ns"});
        let related: RelatedObject = serde_json::from_value(pod).unwrap();
        assert_eq!(
            related.reload,
            Some(ReloadReport {
                ok: false,
                message: Some("tls: \"quoted\" error".into()),
            })
        );
    }

    #[test]
    fn the_transition_time_moves_only_with_the_status() {
        let t0: Timestamp = "2026-11-26T07:30:00.75Z".parse().unwrap();
        let t1: Timestamp = "2026-11-26T08:00:00Z".parse().unwrap();
        let mut written = Written::default();
        assert_eq!(
            written.transition_for(&desired("True"), t0),
            "2026-11-26T07:30:01Z"
        );
        written.condition = Some(desired("True"));
        written.last_transition = "2026-11-26T07:30:01Z".into();
        let mut other_message = desired("True");
        other_message.message = "memcached took the mounted Secret (tls)".into();
        assert_eq!(
            written.transition_for(&other_message, t1),
            "2026-11-26T07:30:01Z"
        );
        assert_eq!(
            written.transition_for(&desired("False"), t1),
            "2026-11-26T08:00:00Z"
        );
    }

    #[test]
    fn back_off_doubles_up_to_64_intervals() {
        let s = Duration::from_secs(5);
        let waits: Vec<u64> = [1, 2, 3, 6, 7, 100]
            .map(|f| backoff(s, f).as_secs())
            .to_vec();
        assert_eq!(waits, [10, 20, 40, 320, 320, 320]);
    }

    /// A failed write is retried after the back-off with the latest condition; an unchanged
    /// condition is not written again.
    #[tokio::test]
    async fn the_writer_retries_and_writes_only_changes() {
        let server = crate::pod::reload_agent::apiclient::tests::Server::new("writer");
        let answers = ["500 Internal Server Error", "200 OK", "200 OK"]
            .map(|s| (s.to_owned(), "{}".to_owned()))
            .to_vec();
        let (port, requests) = server.serve(answers).await;
        let metrics = Arc::new(Metrics::default());
        let writer = Writer {
            client: server.client(port),
            pod: PodRef::new("ns", "p").unwrap(),
            metrics: Arc::clone(&metrics),
            interval: Duration::from_millis(20),
        };
        let (tx, rx) = watch::channel(Some(desired("True")));
        let task = tokio::spawn(writer.run(rx));
        tokio::time::sleep(Duration::from_millis(20)).await;
        tx.send_replace(Some(desired("False")));
        for _ in 0..250 {
            if metrics.condition_writes() == (1, 1) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            metrics.condition_writes(),
            (1, 1),
            "500, then the latest one"
        );
        tx.send_replace(Some(desired("False")));
        tx.send_replace(Some(desired("True")));
        let requests = tokio::time::timeout(Duration::from_secs(5), requests)
            .await
            .unwrap()
            .unwrap();
        drop(tx);
        task.await.unwrap();
        let statuses: Vec<String> = requests
            .iter()
            .map(|r| {
                let body = r.split_once("\r\n\r\n").unwrap().1;
                let patch: serde_json::Value = serde_json::from_str(body).unwrap();
                patch["status"]["conditions"][0]["status"].to_string()
            })
            .collect();
        assert_eq!(statuses, [r#""True""#, r#""False""#, r#""True""#]);
        assert_eq!(metrics.condition_writes(), (2, 1));
    }

    #[test]
    fn pod_names_are_checked_before_they_go_into_the_path() {
        let pod = PodRef::new("cache-ns", "cache-7d9f-x2b.a").unwrap();
        assert_eq!(
            pod.status_path(),
            "/api/v1/namespaces/cache-ns/pods/cache-7d9f-x2b.a/status"
        );
        for (ns, name) in [
            ("", "p"),
            ("ns", ""),
            ("ns", "a/b"),
            ("NS", "p"),
            ("ns", "p?x=1"),
            ("ns", "-p"),
            ("ns", "p..q"),
            ("a.b", "p"),
        ] {
            let err = PodRef::new(ns, name).unwrap_err();
            assert!(err.contains("is not a Kubernetes object name"), "{err}");
        }
    }
}
