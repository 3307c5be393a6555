//! Bench-only driver for `bench/callgrind.sh`: runs one piece of the `/sync` path N times on
//! one request, so that instruction counts per call come out of two runs (N and 0 calls) by
//! subtraction, start-up and file reading cancelling.
//!
//! `perf MODE REQUEST.json N`, MODE one of:
//!
//! - `hook`: decode (as the server does) + `sync()` + encode: the work of a `200` answer
//!   between the body bytes and the answer bytes;
//! - `floor`: decode the request into `serde_json::Value` + encode the same answer (held as a
//!   `serde_json::Value`);
//! - `decode`, `sync`, `encode`: the hook's three steps alone;
//! - `floor-decode`, `floor-encode`: the floor's two steps alone;
//! - `etag`: the hook's ETag of the body (BLAKE3), what a `304` costs besides HTTP;
//! - `etag-sha256`: the same ETag computed with SHA-256, as the hook did before, for comparison;
//! - `size`: every desired child's and the status's length as Go encodes it, as the size check
//!   before each answer measures it.

use std::hint::black_box;
use std::process::ExitCode;

use k8s_openapi::jiff::Timestamp;
use memcached_hook::api::apiserver::go_json_len;
use memcached_hook::hook::{self, Received, SyncRequest};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn now() -> Timestamp {
    Timestamp::from_second(1_795_348_800).expect("a valid timestamp")
}

/// The ETag as it was computed with SHA-256 (hex with `write!`), for comparison with BLAKE3.
fn etag_sha256(body: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::new()
        .chain_update("memcached-hook-perf")
        .chain_update([0])
        .chain_update(body)
        .finalize();
    let mut out = String::with_capacity(75);
    out.push_str("\"sha256:");
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out.push('"');
    out
}

/// Every child's and the status's length as Go encodes it: what the size check counts.
fn stored_size(response: &memcached_hook::hook::SyncResponse) -> usize {
    response.children.iter().map(go_json_len).sum::<usize>() + go_json_len(&response.status)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, path, n] = args.as_slice() else {
        eprintln!("usage: perf MODE REQUEST.json N");
        return ExitCode::FAILURE;
    };
    let Ok(n) = n.parse::<u64>() else {
        eprintln!("N must be a number");
        return ExitCode::FAILURE;
    };
    let body = std::fs::read(path).expect("request readable");
    // Set-up, identical for every N: one decoded request, its answer, the answer as a Value.
    let received = Received::decode(body.as_slice()).expect("request decodes");
    let options = memcached_hook::Options::default();
    let response = memcached_hook::sync(&received, now(), &options).expect("sync answers 200");
    let answer: Value = serde_json::to_value(&response).expect("answer encodes");
    let etag_state = memcached_hook::server::SyncState::new(std::sync::Arc::default());
    for _ in 0..n {
        let body = black_box(body.as_slice());
        match mode.as_str() {
            "hook" => {
                let received = Received::decode(body).expect("decodes");
                let response = memcached_hook::sync(&received, now(), &options).expect("answers");
                black_box(hook::encode(&response).expect("encodes"));
            }
            "floor" => {
                let request: Value = serde_json::from_slice(body).expect("decodes");
                black_box(&request);
                black_box(serde_json::to_vec(black_box(&answer)).expect("encodes"));
            }
            "decode" => {
                black_box(hook::decode::<SyncRequest>(body).expect("decodes"));
            }
            "sync" => {
                black_box(memcached_hook::sync(black_box(&received), now(), &options).ok());
            }
            "encode" => {
                black_box(hook::encode(black_box(&response)).expect("encodes"));
            }
            "floor-decode" => {
                black_box(serde_json::from_slice::<Value>(body).expect("decodes"));
            }
            "floor-encode" => {
                black_box(serde_json::to_vec(black_box(&answer)).expect("encodes"));
            }
            "etag" => {
                black_box(etag_state.etag(body));
            }
            "size" => {
                black_box(stored_size(black_box(&response)));
            }
            "etag-sha256" => {
                black_box(etag_sha256(body));
            }
            other => {
                eprintln!("unknown mode {other}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
