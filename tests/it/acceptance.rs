//! Through the router: a 200 means children the cluster accepts, and what the wire may not say
//! (an object as an array, bytes that are not UTF-8, a Secret's data of the wrong type) is
//! refused without repeating a Secret's content.

use axum::http::StatusCode;
use memcached_hook::server::Config;
use serde_json::{Value, json};

use crate::common::condition;
use crate::http::{call, post};

fn steady_state() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sync/steady-state.json"
    ))
    .expect("fixture")
}

/// `POST /sync`: the status and the body as text.
async fn sync(body: Vec<u8>) -> (StatusCode, String) {
    let request = post("/sync", Some("application/json"), body);
    let (status, _, bytes) = call(&Config::default(), request).await;
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn edited(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut request: Value = serde_json::from_slice(&steady_state()).expect("fixture");
    edit(&mut request);
    serde_json::to_vec(&request).expect("encode")
}

#[tokio::test]
async fn children_the_cluster_would_refuse_keep_the_observed_ones() {
    // What an invalid spec answers: the observed children, as their last-applied records them.
    let (status, kept) = sync(edited(|r| r["parent"]["spec"]["replicas"] = json!(1000))).await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    let kept: Value = serde_json::from_str(&kept).expect("json");
    // 128 KiB of Service annotations pass the spec's bound; stored twice they do not fit.
    let body = edited(|r| {
        let value = "x".repeat(64 * 1024 - 2);
        r["parent"]["spec"]["service"] = json!({"annotations": {"a": value, "b": value}});
    });
    let (status, answer) = sync(body).await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_str(&answer).expect("json");
    let invalid = condition(&answer, "Degraded");
    assert_eq!(invalid.reason, "InvalidSpec");
    let message = invalid.message;
    assert!(
        message.contains("Service/cache.metadata.annotations: Too long: may not be more than 262144 bytes in total as stored"),
        "{message}"
    );
    assert_eq!(answer["children"], kept["children"]);
}

/// A field's path and the edit that gives it as an array.
type Edit = (&'static str, fn(&mut Value));

#[tokio::test]
async fn an_object_given_as_an_array_is_not_read_by_position() {
    let (status, answer) = sync(edited(|r| r["parent"]["spec"] = json!({"replicas": 5}))).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let edits: [Edit; 3] = [
        ("parent.spec", |r| r["parent"]["spec"] = json!([5])),
        ("parent.spec.highAvailability", |r| {
            r["parent"]["spec"]["highAvailability"] = json!([null, {"enabled": true}]);
        }),
        ("controller.spec", |r| r["controller"]["spec"] = json!([[]])),
    ];
    for (at, edit) in edits {
        let (status, answer) = sync(edited(edit)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{at}: {answer}");
        let answer: Value = serde_json::from_str(&answer).expect("json");
        assert_eq!(answer["field"], at, "{answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("invalid type: sequence, expected struct"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn bytes_that_are_not_utf8_are_400_even_where_the_hook_skips() {
    let body = steady_state();
    let needle = b"kubectl-client-side-apply";
    let at = body
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("a managedFields manager, which the hook skips");
    let mut bad = body.clone();
    bad[at + 7] = 0xff;
    let (status, answer) = sync(bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let answer: Value = serde_json::from_str(&answer).expect("json");
    assert_eq!(
        answer["error"],
        format!("malformed JSON: not valid UTF-8 (at byte {})", at + 7)
    );
}

/// A related Secret `cache-tls` whose `data` is `data`.
fn with_secret_data(data: Value) -> Vec<u8> {
    edited(|r| {
        r["related"] = json!({"Secret.v1": {"shop/cache-tls": {
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "cache-tls", "namespace": "shop"},
            "data": data
        }}});
    })
}

#[tokio::test]
async fn a_secrets_data_of_the_wrong_type_is_never_repeated() {
    const CONTENT: &str = "c2VjcmV0LWNvbnRlbnQtNDI=";
    for data in [
        json!(CONTENT),
        json!({"tls.key": 4_242_424_242_u64}),
        json!({"tls.key": true}),
        json!({"tls.key": [CONTENT]}),
        json!({"tls.key": {"nested": CONTENT}}),
        json!([CONTENT]),
        json!(-4_242_424_242_i64),
    ] {
        let (status, answer) = sync(with_secret_data(data.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{data}: {answer}");
        assert!(answer.contains("its content is not shown"), "{answer}");
        for needle in [CONTENT, "4242424242", "true", "nested"] {
            assert!(!answer.contains(needle), "{data}: {answer}");
        }
    }
    let (status, answer) = sync(with_secret_data(json!({"tls.key": CONTENT}))).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(!answer.contains(CONTENT));
}
