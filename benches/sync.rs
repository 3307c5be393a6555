//! `sync()` per fixture, next to the serde floor.
//!
//! For every request in `tests/fixtures/sync/*.json`, re-encoded compact as Metacontroller
//! sends it (and in the directory named by `SYNC_BENCH_EXTRA`, e.g. the large request
//! `bench/gen-large.py` writes):
//!
//! - `hook`: what `POST /sync` does between the body and the answer bytes: decode (as the
//!   server does, with the JSON path of errors), `sync()`, encode;
//! - `sync`: `sync()` alone on an already decoded request;
//! - `floor`: decode the same bytes into `serde_json::Value` and encode the same answer (held
//!   as a `serde_json::Value`): what any JSON hook has to pay at least.
//!
//! After criterion's report it prints `hook / floor` per request from a short interleaved
//! timing (the minimum of several rounds), so the ratio is on one screen.
//!
//! `cargo bench --bench sync` (add `-- NAME` to run only the fixtures whose name contains it).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use k8s_openapi::jiff::Timestamp;
use memcached_hook::Options;
use memcached_hook::hook::{self, Received};
use serde_json::Value;

struct Fixture {
    name: String,
    body: Vec<u8>,
    received: Received<'static>,
    answer: Value,
}

fn now() -> Timestamp {
    "2026-11-22T12:00:00Z".parse().expect("a valid timestamp")
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Fixtures that `sync()` answers with 200 (the rejected ones have no answer to encode).
fn fixtures() -> Vec<Fixture> {
    let mut files = json_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sync"));
    if let Some(extra) = std::env::var_os("SYNC_BENCH_EXTRA") {
        files.extend(json_files(Path::new(&extra)));
    }
    files
        .into_iter()
        .filter_map(|path| {
            // Compact, as Metacontroller sends it (the fixtures are indented for reading).
            let text = std::fs::read(&path).expect("fixture readable");
            let value: serde_json::Value = serde_json::from_slice(&text).expect("fixture is JSON");
            let body = serde_json::to_vec(&value).expect("fixture encodes");
            let received = Received::decode(body.clone()).expect("fixture decodes");
            let response = memcached_hook::sync(&received, now(), &Options::default()).ok()?;
            let answer = serde_json::to_value(&response).expect("answer encodes");
            let name = path.file_stem()?.to_string_lossy().into_owned();
            Some(Fixture {
                name,
                body,
                received,
                answer,
            })
        })
        .collect()
}

fn hook_once(body: &[u8]) -> Vec<u8> {
    let received = Received::decode(body).expect("decodes");
    let response = memcached_hook::sync(&received, now(), &Options::default()).expect("answers");
    hook::encode(&response).expect("encodes")
}

fn sync_once(received: &Received<'_>) -> Option<memcached_hook::hook::SyncResponse> {
    memcached_hook::sync(received, now(), &Options::default()).ok()
}

fn floor_once(body: &[u8], answer: &Value) -> Vec<u8> {
    let request: Value = serde_json::from_slice(body).expect("decodes");
    black_box(&request);
    serde_json::to_vec(answer).expect("encodes")
}

/// Best time per call over `rounds` rounds of `n` calls.
fn best_of(rounds: usize, n: usize, mut f: impl FnMut()) -> Duration {
    (0..rounds)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..n {
                f();
            }
            started.elapsed() / u32::try_from(n).unwrap_or(u32::MAX)
        })
        .min()
        .unwrap_or_default()
}

fn print_ratios(fixtures: &[Fixture], filter: Option<&str>) {
    println!();
    println!(
        "{:<40} {:>9} {:>11} {:>11} {:>11} {:>11}",
        "request", "bytes", "hook", "sync", "floor", "hook/floor"
    );
    for f in fixtures {
        if filter.is_some_and(|s| !f.name.contains(s)) {
            continue;
        }
        let n = (2_000_000 / f.body.len().max(1)).clamp(20, 2_000);
        let (mut hook, mut sync, mut floor) = (Duration::MAX, Duration::MAX, Duration::MAX);
        // Interleaved so that frequency changes hit all three alike.
        for _ in 0..5 {
            hook = hook.min(best_of(1, n, || {
                black_box(hook_once(black_box(&f.body)));
            }));
            sync = sync.min(best_of(1, n, || {
                black_box(sync_once(black_box(&f.received)));
            }));
            floor = floor.min(best_of(1, n, || {
                black_box(floor_once(black_box(&f.body), &f.answer));
            }));
        }
        println!(
            "{:<40} {:>9} {:>9.1}µs {:>9.1}µs {:>9.1}µs {:>11.2}",
            f.name,
            f.body.len(),
            hook.as_secs_f64() * 1e6,
            sync.as_secs_f64() * 1e6,
            floor.as_secs_f64() * 1e6,
            hook.as_secs_f64() / floor.as_secs_f64()
        );
    }
}

fn main() {
    let fixtures = fixtures();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(600))
        .sample_size(20)
        .configure_from_args();
    for f in &fixtures {
        let mut group = criterion.benchmark_group(&f.name);
        group.throughput(Throughput::Bytes(f.body.len() as u64));
        group.bench_function("hook", |b| b.iter(|| hook_once(black_box(&f.body))));
        group.bench_function("sync", |b| {
            b.iter(|| sync_once(black_box(&f.received)));
        });
        group.bench_function("floor", |b| {
            b.iter(|| floor_once(black_box(&f.body), &f.answer));
        });
        group.finish();
    }
    criterion.final_summary();
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this once as a smoke test.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--bench") {
        let filter = args
            .iter()
            .find(|a| !a.starts_with('-'))
            .map(String::as_str);
        print_ratios(&fixtures, filter);
    }
}
