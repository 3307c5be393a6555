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

/// A bad request: name, body, status, the field the error must name (`None`: not checked) and a
/// part of the error message.
type Case<'a> = (&'a str, Vec<u8>, StatusCode, Option<&'a str>, &'a str);

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
    // The object at `pointer` of `base` gets `key` twice, first `a` then `b`: only JSON text can
    // say that (a `Value` holds one value per key).
    let duplicated = |base: &Value, pointer: &str, key: &str, a: Value, b: Value| {
        const MARK: &str = "duplicated-key-goes-here";
        let mut r = base.clone();
        r.pointer_mut(pointer)
            .and_then(Value::as_object_mut)
            .expect("an object")
            .insert(MARK.to_owned(), Value::Null);
        let text = serde_json::to_string(&r).expect("json");
        let pair = format!("{k}:{a},{k}:{b}", k = json!(key));
        let out = text.replacen(&format!("\"{MARK}\":null"), &pair, 1);
        assert_ne!(out, text, "marker replaced");
        out.into_bytes()
    };
    // Sets (or adds) the value at each pointer.
    let edited = |edits: &[(&str, Value)]| {
        let mut r = request.clone();
        for (pointer, value) in edits {
            let (parent, last) = pointer.rsplit_once('/').expect("a pointer");
            let key = last.replace("~1", "/").replace("~0", "~");
            r.pointer_mut(parent)
                .and_then(Value::as_object_mut)
                .expect("an object")
                .insert(key, value.clone());
        }
        r
    };
    // No observed children: an invalid spec has nothing to keep, so it is a 422.
    let first_sync = |edits: &[(&str, Value)]| {
        let mut r = edited(edits);
        r["children"] = json!({});
        serde_json::to_vec(&r).expect("json")
    };
    let huge = "x".repeat(1 << 20);
    let many_args: Vec<String> = (0..100_000).map(|i| format!("--arg-{i}")).collect();
    let many_labels: serde_json::Map<String, Value> = (0..65)
        .map(|i| (format!("label-{i}"), json!("v")))
        .collect();
    let big_annotations: serde_json::Map<String, Value> = (0..3)
        .map(|i| (format!("note-{i}"), json!("y".repeat(60 * 1024))))
        .collect();
    let with_annotations = edited(&[("/parent/spec/service", json!({"annotations": {}}))]);
    let with_secret = edited(&[(
        "/related",
        json!({"Secret.v1": {"shop/sasl": {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "sasl", "namespace": "shop"}, "data": {}}}}),
    )]);
    let with_hooks = |hooks: Value| {
        serde_json::to_vec(&edited(&[("/controller/spec/hooks", hooks)])).expect("json")
    };
    let whole = fixture("steady-state");
    let old_cases: Vec<(&str, Vec<u8>, StatusCode, Option<&str>)> = vec![
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
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let new_cases: Vec<Case<'_>> = vec![
        // ---- Duplicate keys: every object the hook reads refuses a repeated key.
        (
            "duplicate field of the spec",
            duplicated(&request, "/parent/spec", "replicas", json!(1), json!(2)),
            unprocessable,
            Some("parent.spec"),
            "duplicate key \"replicas\"",
        ),
        (
            "duplicate Service annotation",
            duplicated(
                &with_annotations,
                "/parent/spec/service/annotations",
                "team",
                json!("a"),
                json!("b"),
            ),
            unprocessable,
            Some("parent.spec.service.annotations"),
            "duplicate key \"team\"",
        ),
        (
            "duplicate resource in a Kubernetes type",
            duplicated(
                &request,
                "/parent/spec/resources/limits",
                "memory",
                json!("1Gi"),
                json!("64Mi"),
            ),
            unprocessable,
            Some("parent.spec.resources.limits"),
            "duplicate key \"memory\"",
        ),
        (
            "duplicate restart trigger",
            duplicated(
                &edited(&[("/parent/metadata/annotations", json!({}))]),
                "/parent/metadata/annotations",
                "memcached.c5c3.io/restart-trigger",
                json!("1"),
                json!("2"),
            ),
            unprocessable,
            Some("parent.metadata.annotations"),
            "duplicate key \"memcached.c5c3.io/restart-trigger\"",
        ),
        (
            "duplicate kind key of the children",
            duplicated(&request, "/children", "Service.v1", json!({}), json!({})),
            unprocessable,
            Some("children"),
            "duplicate key \"Service.v1\"",
        ),
        (
            "duplicate child key",
            duplicated(
                &request,
                "/children/Service.v1",
                "cache",
                request["children"]["Service.v1"]["cache"].clone(),
                request["children"]["Service.v1"]["cache"].clone(),
            ),
            unprocessable,
            Some("children.Service.v1"),
            "duplicate key \"cache\"",
        ),
        (
            "duplicate name in a child's metadata",
            duplicated(
                &request,
                "/children/Service.v1/cache/metadata",
                "name",
                json!("cache"),
                json!("other"),
            ),
            unprocessable,
            Some("children.Service.v1.cache.metadata"),
            "duplicate key \"name\"",
        ),
        (
            "duplicate key in a related Secret's data",
            duplicated(
                &with_secret,
                "/related/Secret.v1/shop~1sasl/data",
                "password-file",
                json!("YQ=="),
                json!("Yg=="),
            ),
            unprocessable,
            Some("related.Secret.v1.shop/sasl.data"),
            "duplicate key \"password-file\"",
        ),
        (
            "duplicate child resources of the controller",
            duplicated(
                &request,
                "/controller/spec",
                "childResources",
                json!([]),
                json!([]),
            ),
            unprocessable,
            Some("controller.spec"),
            "duplicate key \"childResources\"",
        ),
        (
            "duplicate top-level field",
            duplicated(&request, "", "finalizing", json!(false), json!(true)),
            unprocessable,
            None,
            "duplicate field `finalizing`",
        ),
        // ---- Huge strings and arrays: spec violations; with nothing observed to keep, a 422
        // naming the field (with observed children: tests/it/rules.rs, kept as they are).
        (
            "1 MiB image",
            first_sync(&[("/parent/spec/image", json!(huge))]),
            unprocessable,
            Some("spec.image"),
            "spec.image: Too long: may not be more than 1024 bytes",
        ),
        (
            "100 000 extraArgs",
            first_sync(&[("/parent/spec/memcached/extraArgs", json!(many_args))]),
            unprocessable,
            Some("spec.memcached.extraArgs"),
            "Too many: 100000: must have at most 64 items",
        ),
        (
            "1 MiB extraArgs entry",
            first_sync(&[("/parent/spec/memcached/extraArgs", json!(["-v", huge]))]),
            unprocessable,
            Some("spec.memcached.extraArgs[1]"),
            "may not be more than 1024 bytes",
        ),
        (
            "65 ServiceMonitor labels",
            first_sync(&[(
                "/parent/spec/monitoring",
                json!({"enabled": true, "serviceMonitor": {"additionalLabels": many_labels}}),
            )]),
            unprocessable,
            Some("spec.monitoring.serviceMonitor.additionalLabels"),
            "Too many: 65: must have at most 64 items",
        ),
        (
            "label value over 63 characters",
            first_sync(&[(
                "/parent/spec/monitoring",
                json!({"serviceMonitor": {"additionalLabels": {"team": "t".repeat(64)}}}),
            )]),
            unprocessable,
            Some("spec.monitoring.serviceMonitor.additionalLabels.team"),
            "may not be more than 63 bytes",
        ),
        (
            "annotation key over 317 characters",
            first_sync(&[(
                "/parent/spec/service",
                json!({"annotations": {"k".repeat(318): "v"}}),
            )]),
            unprocessable,
            Some("spec.service.annotations"),
            "keys may not be more than 317 characters",
        ),
        (
            "180 KiB of Service annotations",
            first_sync(&[(
                "/parent/spec/service",
                json!({"annotations": big_annotations}),
            )]),
            unprocessable,
            Some("spec.service.annotations"),
            "may not be more than 131072 bytes in total",
        ),
        (
            "Secret name over 253 characters",
            first_sync(&[(
                "/parent/spec/security",
                json!({"sasl": {"enabled": true, "credentialsSecretRef": {"name": "s".repeat(254)}}}),
            )]),
            unprocessable,
            Some("spec.security.sasl.credentialsSecretRef.name"),
            "may not be more than 253 bytes",
        ),
        (
            "1 MiB budget string",
            first_sync(&[(
                "/parent/spec/highAvailability/podDisruptionBudget/minAvailable",
                json!(huge),
            )]),
            unprocessable,
            Some("spec.highAvailability.podDisruptionBudget.minAvailable"),
            "may not be more than 16 bytes",
        ),
        // ---- Hook API versions: v1, v2 or none; anything else is a body the hook does not know.
        (
            "unknown sync hook version",
            with_hooks(json!({"sync": {"version": "v3"}})),
            unprocessable,
            Some("controller.spec.hooks.sync.version"),
            "unknown Metacontroller hook API version \"v3\"",
        ),
        (
            "empty sync hook version",
            with_hooks(json!({"sync": {"version": ""}})),
            unprocessable,
            Some("controller.spec.hooks.sync.version"),
            "unknown Metacontroller hook API version \"\"",
        ),
        (
            "sync hook version of the wrong type",
            with_hooks(json!({"sync": {"version": 2}})),
            unprocessable,
            Some("controller.spec.hooks.sync.version"),
            "invalid type: integer `2`",
        ),
        (
            "unknown finalize hook version",
            with_hooks(json!({"sync": {"version": "v2"}, "finalize": {"version": "v3"}})),
            unprocessable,
            Some("controller.spec.hooks.finalize.version"),
            "unknown Metacontroller hook API version \"v3\"",
        ),
        (
            "hooks of the wrong shape",
            with_hooks(json!("v2")),
            unprocessable,
            Some("controller.spec.hooks"),
            "invalid type: string",
        ),
        // ---- Children maps whose inner value is not a map of objects.
        (
            "children of a kind as a list",
            with(
                "/children/Deployment.apps~1v1",
                json!([request["children"]["Deployment.apps/v1"]["cache"].clone()]),
            ),
            unprocessable,
            Some("children.Deployment.apps/v1"),
            "invalid type: sequence",
        ),
        (
            "children of a kind as a string",
            with("/children/Service.v1", json!("cache")),
            unprocessable,
            Some("children.Service.v1"),
            "invalid type: string",
        ),
        (
            "a child that is not an object",
            with("/children/Service.v1/cache", json!(7)),
            unprocessable,
            Some("children.Service.v1.cache"),
            "invalid type: integer",
        ),
        (
            "related of a kind as a list",
            with("/related", json!({"Secret.v1": []})),
            unprocessable,
            Some("related.Secret.v1"),
            "invalid type: sequence",
        ),
    ];
    let cases = old_cases
        .into_iter()
        .map(|(name, body, want, field)| (name, body, want, field, ""))
        .chain(new_cases);
    for (name, body, want, field, message) in cases {
        let (status, v) = post_json(body).await;
        assert_eq!(status, want, "{name}: {v}");
        let error = v["error"].as_str().unwrap_or_default();
        assert!(!error.is_empty(), "{name}: {v}");
        assert!(error.contains(message), "{name}: {v}");
        assert!(error.len() < 4096, "{name}: the error repeats the input");
        if let Some(field) = field {
            assert_eq!(v["field"], field, "{name}: {v}");
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
    let customize = |body: Vec<u8>| async move {
        let (status, _, bytes) = call(
            &Config::default(),
            post("/customize", Some("application/json"), body),
        )
        .await;
        (
            status,
            serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null),
        )
    };
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
    // A Secret name no Secret can have (over 253 characters) is not asked for.
    let long = "s".repeat(254);
    let over = json!({"controller": {}, "parent": {"apiVersion": "memcached.c5c3.io/v1beta1",
        "kind": "Memcached", "metadata": {"name": "c", "namespace": "shop"},
        "spec": {"security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": long}},
                              "tls": {"enabled": true, "certificateSecretRef": {"name": "certs"}}}}}});
    let (status, _, bytes) = call(
        &Config::default(),
        post(
            "/customize",
            Some("application/json"),
            serde_json::to_vec(&over).expect("json"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).expect("json"),
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
