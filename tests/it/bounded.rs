//! Bounded work per request, through the router (`oneshot`): the bytes in flight and the sync
//! deadline.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use memcached_hook::server::budget::BODIES_IN_FLIGHT;
use memcached_hook::server::{Config, router};
use serde_json::{Value, json};
use tower::ServiceExt as _;

use super::http::{answer, fixture, post};

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
