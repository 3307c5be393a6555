//! Decode + sync, as `POST /sync` runs them: arbitrary bytes are decoded into a sync request;
//! whatever decodes is synced at a fixed time and the answer encoded. Nothing may panic, and a
//! 200 answer must be JSON that names a kind for every child (Metacontroller rejects a child
//! without `kind`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use memcached_hook::hook::Received;

fuzz_target!(|data: &[u8]| {
    let Ok(received) = Received::decode(data) else {
        return;
    };
    let now = "2026-11-22T12:00:00Z".parse().expect("a valid timestamp");
    // With the body, as the server does: the paths that read it again (kept children under
    // server-side apply, the old workload of a switch) are fuzzed too.
    let options = memcached_hook::Options::default();
    let Ok(response) = memcached_hook::sync(&received, now, &options) else {
        return;
    };
    let bytes = serde_json::to_vec(&response).expect("a sync response always encodes");
    let value: serde_json::Value = serde_json::from_slice(&bytes).expect("the answer is JSON");
    let children = value["children"].as_array().expect("children is a list");
    for child in children {
        assert!(child["kind"].is_string(), "a child without kind: {child}");
        assert!(child["apiVersion"].is_string(), "a child without apiVersion: {child}");
    }
    assert!(value["status"].is_object(), "no status in {value}");
});
