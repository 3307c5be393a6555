//! The hook's default images (`--default-image`, `--default-exporter-image`): a Memcached that
//! names no image gets them, one that names an image keeps it, and another default is another
//! answer (never a cached one).

use std::sync::Arc;

use axum::http::{StatusCode, header};
use memcached_hook::Options;
use memcached_hook::server::Config;
use serde_json::{Value, json};

use crate::common::{pod_spec, request_json, sync_with};
use crate::http::{call, fixture, post};

const MIRROR: &str = "mirror.example/library/memcached:1.6.45";
const EXPORTER: &str = "mirror.example/prom/memcached-exporter:v0.15.4";

fn mirror() -> Options {
    Options {
        default_image: MIRROR.into(),
        default_exporter_image: EXPORTER.into(),
        ..Options::default()
    }
}

/// The images of the pod template's containers, by container name.
fn images(response: &Value) -> Vec<(String, String)> {
    pod_spec(response)
        .containers
        .into_iter()
        .map(|c| (c.name, c.image.unwrap_or_default()))
        .collect()
}

fn pair(name: &str, image: &str) -> (String, String) {
    (name.to_owned(), image.to_owned())
}

#[test]
fn a_memcached_without_images_gets_the_hook_s_defaults() {
    let spec = json!({"monitoring": {"enabled": true}});
    let mirrored = sync_with(&request_json(spec.clone()), &mirror());
    assert_eq!(
        images(&mirrored),
        [pair("memcached", MIRROR), pair("exporter", EXPORTER)]
    );
    let built_in = sync_with(&request_json(spec), &Options::default());
    assert_eq!(
        images(&built_in),
        [
            pair("memcached", "memcached:1.6.45"),
            pair("exporter", "prom/memcached-exporter:v0.15.4")
        ]
    );
}

#[test]
fn images_named_in_the_spec_win_over_the_hook_s_defaults() {
    let spec = json!({"image": "memcached:1.6.40",
                      "monitoring": {"enabled": true, "exporterImage": "exporter:7"}});
    let response = sync_with(&request_json(spec), &mirror());
    assert_eq!(
        images(&response),
        [
            pair("memcached", "memcached:1.6.40"),
            pair("exporter", "exporter:7")
        ]
    );
}

#[tokio::test]
async fn another_default_image_is_another_etag() {
    let etag = |options: Options| async move {
        let config = Config {
            options: Arc::new(options),
            ..Config::default()
        };
        let request = post("/sync", Some("application/json"), fixture("steady-state"));
        let (status, headers, _) = call(&config, request).await;
        assert_eq!(status, StatusCode::OK);
        headers[header::ETAG].to_str().expect("ascii").to_owned()
    };
    let built_in = etag(Options::default()).await;
    assert_eq!(
        built_in,
        etag(Options::default()).await,
        "same options, same ETag"
    );
    let memcached = etag(Options {
        default_image: MIRROR.into(),
        ..Options::default()
    })
    .await;
    let exporter = etag(Options {
        default_exporter_image: EXPORTER.into(),
        ..Options::default()
    })
    .await;
    assert_ne!(built_in, memcached);
    assert_ne!(built_in, exporter);
    assert_ne!(memcached, exporter);
}

/// The install manifests write the hook's built-in defaults out (a mirror patches them): they
/// must be the defaults the hook has, or an install would move every cache to another image.
#[test]
fn the_install_manifests_write_the_hooks_own_defaults() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let memcached = memcached_hook::api::DEFAULT_IMAGE;
    let exporter = memcached_hook::api::monitoring::DEFAULT_EXPORTER_IMAGE;
    let deploy = std::fs::read_to_string(root.join("deploy/hook/deployment.yaml")).unwrap();
    for (name, image) in [
        ("MEMCACHED_HOOK_DEFAULT_IMAGE", memcached),
        ("MEMCACHED_HOOK_DEFAULT_EXPORTER_IMAGE", exporter),
    ] {
        let written = format!("- name: {name}\n          value: {image}\n");
        assert!(
            deploy.contains(&written),
            "deploy/hook/deployment.yaml lacks {written:?}"
        );
    }
    let values = std::fs::read_to_string(root.join("charts/memcached-hook/values.yaml")).unwrap();
    let written = format!("defaultImages:\n  memcached: {memcached}\n  exporter: {exporter}\n");
    assert!(values.contains(&written), "values.yaml lacks {written:?}");
}
