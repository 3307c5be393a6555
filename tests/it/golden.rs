//! Golden responses for every fixture in `tests/fixtures/sync/` (requests shaped like
//! Metacontroller's). Accept changes with `INSTA_UPDATE=always cargo test` and review the diff.

use serde_json::json;

use crate::common::now;

#[test]
fn golden_sync_responses() {
    insta::glob!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"),
        "sync/*.json",
        |path| {
            let bytes = std::fs::read(path).expect("fixture readable");
            let received =
                memcached_hook::hook::Received::decode(&bytes[..]).expect("fixture decodes");
            let options = memcached_hook::Options::default();
            let answer = match memcached_hook::sync(&received, now(), &options) {
                Ok(response) => serde_json::to_value(&response).expect("encodes"),
                Err(error) => {
                    json!({"rejected": {"error": error.to_string(), "field": error.field()}})
                }
            };
            insta::assert_yaml_snapshot!(answer);
        }
    );
}

/// Same request, same bytes: the answer can be ETagged and never makes Metacontroller loop.
#[test]
fn responses_are_byte_stable() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sync"))
        .expect("fixtures")
    {
        let bytes = std::fs::read(entry.expect("entry").path()).expect("readable");
        let encode = || {
            let received = memcached_hook::hook::Received::decode(&bytes[..]).expect("decodes");
            memcached_hook::sync(&received, now(), &memcached_hook::Options::default())
                .map(|r| serde_json::to_vec(&r).expect("encodes"))
        };
        assert_eq!(encode(), encode());
    }
}
