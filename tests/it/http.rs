//! The HTTP edge through the router (`oneshot`): codes, bodies, ETag, limits.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use memcached_hook::server::{Config, router};
use serde_json::{Value, json};
use tower::ServiceExt as _;

pub(crate) fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/sync/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

pub(crate) async fn call(
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

pub(crate) fn post(path: &str, content_type: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut builder = Request::builder().method(Method::POST).uri(path);
    if let Some(ct) = content_type {
        builder = builder.header(header::CONTENT_TYPE, ct);
    }
    builder.body(body.into()).expect("request")
}

/// Status and JSON body (`null` when the body is not JSON) of `request` through a router for
/// `config`.
pub(crate) async fn answer(config: &Config, request: Request<Body>) -> (StatusCode, Value) {
    let (status, _, body) = call(config, request).await;
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// What `POST /sync` with a JSON `body` answers under the default config.
pub(crate) async fn post_json(body: impl Into<Body>) -> (StatusCode, Value) {
    answer(
        &Config::default(),
        post("/sync", Some("application/json"), body),
    )
    .await
}

/// What `POST /customize` with a JSON `body` answers under the default config.
async fn customize(body: Vec<u8>) -> (StatusCode, Value) {
    answer(
        &Config::default(),
        post("/customize", Some("application/json"), body),
    )
    .await
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
        etag.starts_with("\"blake3:") && etag.ends_with('"') && etag.len() == 73,
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

/// Every case of the bad-input catalogue (`tests/fixtures/bad-input/catalogue.yaml`) gets its
/// status, names its field and says what is wrong, briefly.
#[tokio::test]
async fn bad_input_catalogue_never_gets_200() {
    let cases = crate::bad_input::cases();
    assert!(cases.len() >= 40, "the whole catalogue is read");
    for case in cases {
        let name = &case.name;
        let (status, v) = post_json(case.body()).await;
        assert_eq!(status.as_u16(), case.status, "{name}: {v}");
        let error = v["error"].as_str().unwrap_or_default();
        assert!(!error.is_empty(), "{name}: {v}");
        assert!(error.contains(&case.message), "{name}: {v}");
        assert!(error.len() < 4096, "{name}: the error repeats the input");
        if let Some(field) = &case.field {
            assert_eq!(v["field"], field.as_str(), "{name}: {v}");
        }
    }
}

#[tokio::test]
async fn hook_versions_v1_v2_and_none_are_accepted() {
    let request: Value = serde_json::from_slice(&fixture("steady-state")).expect("json");
    let mut answers = Vec::new();
    for hooks in [
        Value::Null,
        json!({}),
        json!({"sync": null}),
        json!({"sync": {"version": null}}),
        json!({"sync": {"version": "v1"}}),
        json!({"sync": {"version": "v2"}, "finalize": {"version": "v1"}}),
        // Only the hooks whose calls reach /sync are read.
        json!({"sync": {"version": "v1"}, "customize": {"version": "v3"}}),
    ] {
        let mut r = request.clone();
        r["controller"]["spec"]["hooks"] = hooks.clone();
        let (status, v) = post_json(serde_json::to_vec(&r).expect("json")).await;
        assert_eq!(status, StatusCode::OK, "{hooks}: {v}");
        answers.push(v["children"].clone());
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "same children");
}

#[tokio::test]
async fn customize_checks_its_hook_version_and_duplicate_keys() {
    let parent = json!({"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
        "metadata": {"name": "c", "namespace": "shop"}, "spec": {}});
    for controller in [
        Value::Null,
        json!({}),
        json!({"spec": {"hooks": {"customize": {"version": "v1"}}}}),
        json!({"spec": {"hooks": {"customize": {"version": "v2"}, "sync": {"version": "v3"}}}}),
    ] {
        let body = json!({"controller": controller, "parent": parent});
        let (status, v) = customize(serde_json::to_vec(&body).expect("json")).await;
        assert_eq!(status, StatusCode::OK, "{controller}: {v}");
    }
    let body = json!({"controller": {"spec": {"hooks": {"customize": {"version": "v3"}}}},
                      "parent": parent});
    let (status, v) = customize(serde_json::to_vec(&body).expect("json")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["field"], "controller.spec.hooks.customize.version", "{v}");
    assert!(
        v["error"].as_str().unwrap_or_default().contains("\"v3\""),
        "{v}"
    );
    let text = serde_json::to_string(&json!({"controller": {}, "parent": parent}))
        .expect("json")
        .replacen("\"spec\":{}", "\"spec\":{},\"spec\":{\"replicas\":1}", 1);
    let (status, v) = customize(text.into_bytes()).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["field"], "parent", "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap_or_default()
            .contains("duplicate key \"spec\""),
        "{v}"
    );
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
    let (status, v) = customize(body).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        v,
        json!({"relatedResources": [{"apiVersion": "v1", "resource": "secrets", "namespace": "shop", "names": ["certs", "sasl"]}]})
    );
    let none = json!({"controller": {}, "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached", "metadata": {"name": "c"}, "spec": {}}});
    let (_, v) = customize(serde_json::to_vec(&none).expect("json")).await;
    assert_eq!(v, json!({"relatedResources": []}));
    // A Secret name no Secret can have (over 253 characters) is not asked for.
    let long = "s".repeat(254);
    let over = json!({"controller": {}, "parent": {"apiVersion": "memcached.c5c3.io/v1beta1",
        "kind": "Memcached", "metadata": {"name": "c", "namespace": "shop"},
        "spec": {"security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": long}},
                              "tls": {"enabled": true, "certificateSecretRef": {"name": "certs"}}}}}});
    let (status, v) = customize(serde_json::to_vec(&over).expect("json")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        v,
        json!({"relatedResources": [{"apiVersion": "v1", "resource": "secrets", "namespace": "shop", "names": ["certs"]}]})
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
            .starts_with("application/openmetrics-text")
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
