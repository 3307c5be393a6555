//! The HTTP edge through the router (`oneshot`): codes, bodies, ETag, limits.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use memcached_hook::server::{Config, router};
use serde_json::{Value, json};
use tower::ServiceExt as _;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/sync/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

async fn call(
    config: &Config,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let response = router(config).oneshot(request).await.expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
        .to_vec();
    (status, headers, body)
}

fn post(path: &str, content_type: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut builder = Request::builder().method(Method::POST).uri(path);
    if let Some(ct) = content_type {
        builder = builder.header(header::CONTENT_TYPE, ct);
    }
    builder.body(body.into()).expect("request")
}

async fn post_json(body: impl Into<Body>) -> (StatusCode, Value) {
    let (status, _, bytes) = call(
        &Config::default(),
        post("/sync", Some("application/json"), body),
    )
    .await;
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn sync_answers_children_status_and_an_etag() {
    let (status, headers, body) = call(
        &Config::default(),
        post("/sync", Some("application/json"), fixture("steady-state")),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    let etag = headers[header::ETAG].to_str().expect("ascii").to_owned();
    assert!(
        etag.starts_with("\"sha256:") && etag.ends_with('"') && etag.len() == 73,
        "{etag}"
    );
    let v: Value = serde_json::from_slice(&body).expect("json");
    let kinds: Vec<&str> = v["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter_map(|c| c["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["Deployment", "Service", "PodDisruptionBudget"]);
    assert!(v["status"]["conditions"].is_array());

    // The same body with the ETag: 304, no body, before any decoding.
    let mut again = post("/sync", Some("application/json"), fixture("steady-state"));
    again
        .headers_mut()
        .insert(header::IF_NONE_MATCH, etag.parse().expect("header"));
    let (status, headers, body) = call(&Config::default(), again).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    assert_eq!(headers[header::ETAG], etag.as_str());

    // A different body does not match.
    let mut other = post("/sync", Some("application/json"), fixture("scale-up"));
    other
        .headers_mut()
        .insert(header::IF_NONE_MATCH, etag.parse().expect("header"));
    assert_eq!(call(&Config::default(), other).await.0, StatusCode::OK);
}

#[tokio::test]
async fn curl_default_content_type_is_accepted() {
    let (status, _, _) = call(
        &Config::default(),
        post(
            "/sync",
            Some("application/x-www-form-urlencoded"),
            fixture("steady-state"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn bad_input_catalogue_never_gets_200() {
    let request: Value = serde_json::from_slice(&fixture("steady-state")).expect("json");
    let without = |key: &str| {
        let mut r = request.clone();
        r.as_object_mut().expect("object").remove(key);
        serde_json::to_vec(&r).expect("json")
    };
    let with = |pointer: &str, value: Value| {
        let mut r = request.clone();
        *r.pointer_mut(pointer).expect("path") = value;
        serde_json::to_vec(&r).expect("json")
    };
    let whole = fixture("steady-state");
    let cases: Vec<(&str, Vec<u8>, StatusCode, Option<&str>)> = vec![
        ("empty body", vec![], StatusCode::BAD_REQUEST, None),
        ("not JSON", b"hello".to_vec(), StatusCode::BAD_REQUEST, None),
        (
            "truncated",
            whole[..whole.len() / 2].to_vec(),
            StatusCode::BAD_REQUEST,
            None,
        ),
        (
            "invalid UTF-8",
            b"{\"parent\": \"\xff\xfe\"}".to_vec(),
            StatusCode::BAD_REQUEST,
            Some("parent"),
        ),
        (
            "trailing garbage",
            [whole.clone(), b"}".to_vec()].concat(),
            StatusCode::BAD_REQUEST,
            None,
        ),
        (
            "array",
            b"[]".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
        ),
        (
            "missing parent",
            without("parent"),
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
        ),
        (
            "missing controller",
            without("controller"),
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
        ),
        (
            "parent of another kind",
            with("/parent/kind", json!("Redis")),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("parent.apiVersion"),
        ),
        (
            "parent of another group",
            with("/parent/apiVersion", json!("cache.example.com/v1")),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("parent.apiVersion"),
        ),
        (
            "children of the wrong shape",
            with("/children", json!([1, 2])),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("children"),
        ),
        (
            "child without kind",
            with("/children/Service.v1/cache/kind", Value::Null),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("children.Service.v1.cache.kind"),
        ),
        (
            "replicas of the wrong type",
            with("/parent/spec/replicas", json!("three")),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("parent.spec.replicas"),
        ),
        (
            "replicas out of int32",
            with("/parent/spec/replicas", json!(1_u64 << 40)),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("parent.spec.replicas"),
        ),
        (
            "threads as a float",
            with("/parent/spec/memcached/threads", json!(1.5)),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("parent.spec.memcached.threads"),
        ),
        (
            "deeply nested",
            with(
                "/parent/spec/image",
                serde_json::from_str(&format!("{}{}", "[".repeat(100), "]".repeat(100)))
                    .expect("json"),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("parent.spec.image"),
        ),
        (
            "deeper than the parser allows",
            [
                b"{\"parent\": {\"spec\": {\"memcached\": {\"extraArgs\": ".to_vec(),
                b"[".repeat(100_000),
            ]
            .concat(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("parent.spec.memcached.extraArgs[0]"),
        ),
    ];
    for (name, body, want, field) in cases {
        let (status, v) = post_json(body).await;
        assert_eq!(status, want, "{name}: {v}");
        assert!(
            v["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{name}: {v}"
        );
        if let Some(field) = field {
            assert_eq!(v["field"], field, "{name}: {v}");
        }
    }
}

#[tokio::test]
async fn wrong_content_type_is_415() {
    let (status, _, body) = call(
        &Config::default(),
        post("/sync", Some("text/plain"), fixture("steady-state")),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let v: Value = serde_json::from_slice(&body).expect("json error");
    assert!(
        v["error"]
            .as_str()
            .unwrap_or_default()
            .contains("text/plain")
    );
}

#[tokio::test]
async fn body_over_the_limit_is_413_and_the_default_limit_is_well_above_2_mib() {
    assert!(Config::default().body_limit >= 8 * 1024 * 1024);
    let small = Config {
        body_limit: 1024,
        ..Config::default()
    };
    let (status, _, body) = call(
        &small,
        post("/sync", Some("application/json"), fixture("steady-state")),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        serde_json::from_slice::<Value>(&body).is_ok(),
        "JSON error body"
    );
    // 3 MiB of padding in an ignored field still syncs with the default limit.
    let mut big: Value = serde_json::from_slice(&fixture("steady-state")).expect("json");
    big["parent"]["metadata"]["annotations"] = json!({"padding": "x".repeat(3 * 1024 * 1024)});
    let (status, _) = post_json(serde_json::to_vec(&big).expect("json")).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn invalid_spec_answers() {
    let (status, v) = post_json(fixture("invalid-spec-keeps-children")).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (status, v) = post_json(fixture("invalid-spec-first-sync")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["field"], "spec.replicas");
    assert!(
        v["error"]
            .as_str()
            .unwrap_or_default()
            .contains("should be less than or equal to 64"),
        "{v}"
    );
}

#[tokio::test]
async fn customize_names_the_enabled_secrets() {
    let parent = json!({"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
        "metadata": {"name": "c", "namespace": "shop"},
        "spec": {"security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": "sasl"}},
                              "tls": {"enabled": true, "certificateSecretRef": {"name": "certs"}}}}});
    let body = serde_json::to_vec(&json!({"controller": {}, "parent": parent})).expect("json");
    let (status, _, bytes) = call(
        &Config::default(),
        post("/customize", Some("application/json"), body),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let v: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(
        v,
        json!({"relatedResources": [{"apiVersion": "v1", "resource": "secrets", "namespace": "shop", "names": ["certs", "sasl"]}]})
    );
    let none = json!({"controller": {}, "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached", "metadata": {"name": "c"}, "spec": {}}});
    let (_, _, bytes) = call(
        &Config::default(),
        post(
            "/customize",
            Some("application/json"),
            serde_json::to_vec(&none).expect("json"),
        ),
    )
    .await;
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).expect("json"),
        json!({"relatedResources": []})
    );
}

#[tokio::test]
async fn health_and_unknown_routes() {
    for path in ["/healthz", "/readyz"] {
        let request = Request::builder()
            .uri(path)
            .body(Body::empty())
            .expect("request");
        assert_eq!(call(&Config::default(), request).await.0, StatusCode::OK);
    }
    let request = Request::builder()
        .uri("/nope")
        .body(Body::empty())
        .expect("request");
    let (status, _, body) = call(&Config::default(), request).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(serde_json::from_slice::<Value>(&body).is_ok());
    let get_sync = Request::builder()
        .uri("/sync")
        .body(Body::empty())
        .expect("request");
    assert_eq!(
        call(&Config::default(), get_sync).await.0,
        StatusCode::METHOD_NOT_ALLOWED
    );
}

#[tokio::test]
async fn metrics_count_requests_codes_and_outcomes() {
    let app = router(&Config::default());
    let send = |request: Request<Body>| {
        let app = app.clone();
        async move { app.oneshot(request).await.expect("infallible") }
    };
    let ok = send(post(
        "/sync",
        Some("application/json"),
        fixture("steady-state"),
    ))
    .await;
    let etag = ok.headers()[header::ETAG].clone();
    let mut again = post("/sync", Some("application/json"), fixture("steady-state"));
    again.headers_mut().insert(header::IF_NONE_MATCH, etag);
    assert_eq!(send(again).await.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(
        send(post("/sync", Some("text/plain"), "x")).await.status(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(
        send(post(
            "/sync",
            Some("application/json"),
            fixture("invalid-spec-keeps-children")
        ))
        .await
        .status(),
        StatusCode::OK
    );
    let response = send(
        Request::builder()
            .uri("/metrics")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap_or_default()
            .starts_with("text/plain")
    );
    let text = String::from_utf8(
        response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec(),
    )
    .expect("utf-8");
    for line in [
        "memcached_hook_http_requests_total{route=\"/sync\",code=\"200\"} 2",
        "memcached_hook_http_requests_total{route=\"/sync\",code=\"304\"} 1",
        "memcached_hook_http_requests_total{route=\"/sync\",code=\"415\"} 1",
        "memcached_hook_http_request_duration_seconds_count{route=\"/sync\"} 4",
        "memcached_hook_sync_outcomes_total{outcome=\"synced\"} 1",
        "memcached_hook_sync_outcomes_total{outcome=\"kept_invalid\"} 1",
        "memcached_hook_sync_outcomes_total{outcome=\"not_modified\"} 1",
        "memcached_hook_sync_outcomes_total{outcome=\"rejected\"} 1",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    assert!(
        !text.contains("\"cache\"") && !text.contains("shop"),
        "no parent names in labels"
    );
}
