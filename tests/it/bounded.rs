//! Bounded work per request, through the router (`oneshot`): the bytes in flight and the sync
//! deadline.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use memcached_hook::server::budget::BODIES_IN_FLIGHT;
use memcached_hook::server::{Config, router};
use serde_json::{Value, json};
use tower::ServiceExt as _;

use super::http::{answer, fixture, post};
use super::leaving::{ZONES, leaving_without_last_applied, zoned_with_observed};

/// A body of unannounced length that sends one byte and then nothing until its sender drops.
struct Stalled {
    sent: bool,
    released: tokio::sync::oneshot::Receiver<()>,
}

impl hyper::body::Body for Stalled {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
        if !std::mem::replace(&mut self.sent, true) {
            return Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from_static(b"{")))));
        }
        Pin::new(&mut self.released).poll(cx).map(|_| None)
    }
}

fn stalled_body() -> (Body, tokio::sync::oneshot::Sender<()>) {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let body = Stalled {
        sent: false,
        released,
    };
    (Body::new(body), release)
}

#[tokio::test]
async fn requests_beyond_the_bytes_in_flight_wait_for_their_share() {
    let config = Config {
        body_limit: 64 * 1024,
        ..Config::default()
    };
    let app = router(&config);
    // Bodies of unannounced length each hold a whole body limit until they end.
    let mut releases = Vec::new();
    let mut held = Vec::new();
    for _ in 0..BODIES_IN_FLIGHT {
        let (body, release) = stalled_body();
        releases.push(release);
        held.push(tokio::spawn(app.clone().oneshot(post(
            "/sync",
            Some("application/json"),
            body,
        ))));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    // A small request now waits for its share...
    let small = tokio::spawn(app.clone().oneshot(post(
        "/sync",
        Some("application/json"),
        fixture("steady-state"),
    )));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !small.is_finished(),
        "answered with every byte in flight taken"
    );
    // ...and is answered once the held bodies end (they are not JSON: 400).
    drop(releases);
    for task in held {
        let response = task.await.expect("join").expect("infallible");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    }
    let response = small.await.expect("join").expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_sync_past_its_deadline_is_never_answered_200() {
    let config = Config {
        request_timeout: Duration::from_millis(30),
        ..Config::default()
    };
    // 12 MiB in a field the hook skips: tens of milliseconds to hash and decode in a test build.
    let mut big: Value = serde_json::from_slice(&fixture("steady-state")).expect("json");
    big["parent"]["metadata"]["annotations"] = json!({"padding": "x".repeat(12 << 20)});
    let body = serde_json::to_vec(&big).expect("json");
    let (status, v) = answer(&config, post("/sync", Some("application/json"), body)).await;
    // 503 when the sync ran out of time; 408 when a loaded machine spent the time reading the
    // body already. Never the 200 a sync that ran on past its deadline used to give.
    match status {
        StatusCode::SERVICE_UNAVAILABLE => assert!(
            v["error"]
                .as_str()
                .unwrap_or_default()
                .contains("did not finish within the request timeout"),
            "{v}"
        ),
        StatusCode::REQUEST_TIMEOUT => {}
        other => panic!("{other}: {v}"),
    }
}

#[tokio::test]
async fn over_long_bounded_lists_are_refused_with_their_count() {
    let cases = [
        ("/parent/spec/tolerations", "spec.tolerations"),
        (
            "/parent/spec/highAvailability/topologySpreadConstraints",
            "spec.highAvailability.topologySpreadConstraints",
        ),
        (
            "/parent/spec/security/networkPolicy/allowedSources",
            "spec.security.networkPolicy.allowedSources",
        ),
    ];
    for (pointer, field) in cases {
        let mut request: Value = serde_json::from_slice(&fixture("steady-state")).expect("json");
        request["children"] = json!({});
        let mut at = &mut request;
        for key in pointer.split('/').skip(1) {
            if at.get(key).is_none() || at[key].is_null() {
                at[key] = json!({});
            }
            at = &mut at[key];
        }
        // 200 000 items past the bound: counted, never decoded.
        *at = Value::Array(vec![json!({}); 200_000]);
        let body = serde_json::to_vec(&request).expect("json");
        let config = Config::default();
        let (status, v) = answer(&config, post("/sync", Some("application/json"), body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {v}");
        let error = v["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(&format!("{field}: Too many: 200000: must have at most")),
            "{field}: {v}"
        );
    }
}

/// The workloads the answer to `body` keeps as observed.
fn kept(body: &[u8]) -> usize {
    let received = memcached_hook::hook::Received::decode(body).expect("decodes");
    let answer =
        memcached_hook::sync(&received, super::common::now(), &Default::default()).expect("sync");
    answer
        .children
        .iter()
        .filter(|c| matches!(c, memcached_hook::hook::Child::Kept(_)))
        .count()
}

// How long it takes is measured by `cargo bench --bench keep_path` (linear per workload,
// BENCHMARKS.md); here, that the body is read once for every kept workload: each one found in
// the same decoded list, however many there are.
#[test]
fn leaving_workloads_without_last_applied_are_kept_from_one_reading_of_the_body() {
    let body = leaving_without_last_applied(600);
    assert_eq!(kept(&body), 600);
    let received = memcached_hook::hook::Received::decode(body.as_slice()).expect("decodes");
    let mut size = 0;
    let mut at: Vec<usize> = received
        .request()
        .children
        .iter()
        .map(|child| {
            let sent = received.sent(child).expect("sent in the body");
            assert_eq!(sent.metadata.name, child.metadata.name);
            size = std::mem::size_of_val(sent);
            std::ptr::from_ref(sent) as usize
        })
        .collect();
    at.sort_unstable();
    assert!(
        at.windows(2).all(|w| w[1] - w[0] == size),
        "every child found in one list read from the body"
    );
}

#[test]
fn a_sync_stopped_at_its_deadline_gives_up_on_the_workloads_it_has_not_kept() {
    let body = leaving_without_last_applied(1_000);
    let sync = |stop: bool| {
        let flag = Arc::new(AtomicBool::new(false));
        let received = memcached_hook::hook::Received::decode(body.as_slice())
            .expect("decodes")
            .with_stop(Arc::clone(&flag));
        // The server raises the flag when it answers 503 at the request's deadline.
        flag.store(stop, Ordering::Relaxed);
        let started = std::time::Instant::now();
        let answer = memcached_hook::sync(&received, super::common::now(), &Default::default());
        (started.elapsed(), answer.is_ok(), received.stopped())
    };
    let (full, answered, _) = sync(false);
    let (stopped, answered_stopped, seen) = sync(true);
    assert!(answered && !answered_stopped && seen);
    // The thousand workloads are not kept one by one once the answer is no longer awaited.
    assert!(
        stopped * 4 < full,
        "{stopped:?} stopped against {full:?} in full"
    );
}

// The cost per workload of this request is measured by `cargo bench --bench keep_path`; here,
// that a zoned request with hundreds of observed zone workloads answers each zone of the spec
// once, and no workload it did not observe or desire.
#[test]
fn a_zoned_request_with_many_observed_workloads_answers_each_zone_once() {
    let body = zoned_with_observed(600);
    let received = memcached_hook::hook::Received::decode(body.as_slice()).expect("decodes");
    let answer =
        memcached_hook::sync(&received, super::common::now(), &Default::default()).expect("sync");
    let answer = serde_json::to_value(&answer).expect("encodes");
    let names: Vec<&str> = answer["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter(|c| c["kind"] == "Deployment")
        .map(|c| c["metadata"]["name"].as_str().expect("named"))
        .collect();
    let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "a workload answered twice");
    for i in 0..ZONES {
        assert!(
            unique.contains(format!("cache-zone-{i:02}").as_str()),
            "zone {i}"
        );
    }
    let observed = |name: &str| {
        name.strip_prefix("cache-gone-")
            .and_then(|i| i.parse::<usize>().ok())
            .is_some_and(|i| (ZONES..600).contains(&i))
    };
    assert!(
        unique
            .iter()
            .all(|n| n.starts_with("cache-zone-") || observed(n)),
        "{unique:?}"
    );
}
