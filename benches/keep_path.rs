//! The keep path under server-side apply (`keep::observed` of every child, which finds no
//! last-applied annotation and reads the managed fields) at two request sizes; and a whole sync
//! of a zones switch whose 1000, 2000 and 4000 leaving workloads carry no last-applied
//! annotation, each kept from its labels and spec in the body; and whole syncs of a zoned request
//! with many observed workloads.
//!
//! The request is the one an attacker who may edit a child Service makes the hook read: one
//! observed Service with `PORTS` ports, every one named in the controller's `Apply` field set
//! by a `k:{"port":...,"protocol":"TCP"}` key. After criterion's report it prints the time per
//! request and per KiB at each size and the ratio between the two sizes' times next to the
//! ratio of their sizes: equal ratios mean work linear in size.
//!
//! For the leaving workloads, and for a zoned request mid-rollout (16 zones) with 250 to 2000
//! observed zone workloads (those past the 16 of its zones leaving), it prints the time per sync
//! and per workload at each count: equal times per workload mean work linear in their number.
//!
//! `cargo bench --bench keep_path`.

#![allow(clippy::cast_precision_loss)] // sizes and times far below 2^52

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use memcached_hook::hook::Received;
use memcached_hook::keep::{self, Asked};
use serde_json::{Map, Value, json};

#[path = "../tests/support/leaving.rs"]
mod leaving;
use leaving::{leaving_without_last_applied, zoned_with_observed};

const UID: &str = "6f1c2b9e-3d4a-4f5b-9c1d-2e3f4a5b6c7d";
/// The two sizes, in ports.
const PORTS: [usize; 2] = [1_000, 8_000];

/// A sync request whose one observed Service has `ports` ports, all applied by the controller.
fn request(ports: usize) -> Vec<u8> {
    let mut list = Vec::with_capacity(ports);
    let mut set = Map::new();
    for port in 0..ports {
        list.push(
            json!({"name": format!("p{port}"), "port": port, "protocol": "TCP",
                         "targetPort": port}),
        );
        set.insert(
            format!("k:{{\"port\":{port},\"protocol\":\"TCP\"}}"),
            json!({".": {}, "f:name": {}, "f:port": {}, "f:targetPort": {}}),
        );
    }
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": "cache", "namespace": "shop",
            "ownerReferences": [{"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                                 "name": "cache", "uid": UID, "controller": true}],
            "managedFields": [{"manager": "metacontroller", "operation": "Apply",
                               "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {
                "f:metadata": {"f:ownerReferences": {format!("k:{{\"uid\":\"{UID}\"}}"): {}}},
                "f:spec": {"f:ports": Value::Object(set)}}}]
        },
        "spec": {"ports": list}
    });
    serde_json::to_vec(&json!({
        "controller": {"spec": {"childResources": [{"apiVersion": "v1", "resource": "services"}]}},
        "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                   "metadata": {"name": "cache", "namespace": "shop", "uid": UID}},
        "children": {"Service.v1": {"cache": service}}
    }))
    .expect("json")
}

/// Every observed child of `received`, kept.
fn kept(received: &Received<'_>) -> Vec<memcached_hook::hook::Child> {
    keep::observed(received, Asked::EveryChild).expect("kept")
}

/// The least time of `rounds` rounds of `calls` calls, per call.
fn least(received: &Received<'_>, rounds: usize, calls: u32) -> Duration {
    (0..rounds)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..calls {
                black_box(kept(black_box(received)));
            }
            started.elapsed() / calls
        })
        .min()
        .expect("rounds")
}

/// The counts of leaving workloads.
const LEAVING: [usize; 3] = [1_000, 2_000, 4_000];

/// The counts of observed workloads of the zoned request.
const ZONED: [usize; 4] = [250, 500, 1_000, 2_000];

/// The least time of `rounds` whole syncs (decode included) of `body`.
fn least_sync(body: &[u8], rounds: usize) -> Duration {
    let options = memcached_hook::Options::default();
    let now = "2026-11-22T12:00:00Z".parse().expect("a timestamp");
    (0..rounds)
        .map(|_| {
            let started = Instant::now();
            let received = Received::decode(black_box(body)).expect("decodes");
            black_box(memcached_hook::sync(&received, now, &options).expect("sync"));
            started.elapsed()
        })
        .min()
        .expect("rounds")
}

fn main() {
    let bodies: Vec<(usize, Vec<u8>)> = PORTS.iter().map(|&p| (p, request(p))).collect();
    let received: Vec<Received<'_>> = bodies
        .iter()
        .map(|(_, body)| Received::decode(body.as_slice()).expect("decodes"))
        .collect();
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("keep_path");
    for ((ports, body), received) in bodies.iter().zip(&received) {
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(format!("{ports}_ports"), |b| {
            b.iter(|| kept(black_box(received)));
        });
    }
    group.finish();
    criterion.final_summary();

    let timed: Vec<(usize, usize, Duration)> = bodies
        .iter()
        .zip(&received)
        .map(|((ports, body), received)| (*ports, body.len(), least(received, 7, 5)))
        .collect();
    for (ports, bytes, time) in &timed {
        println!(
            "keep path: {ports} ports, {bytes} bytes: {:.2} ms, {:.2} µs/KiB",
            time.as_secs_f64() * 1e3,
            time.as_secs_f64() * 1e6 / (*bytes as f64 / 1024.0)
        );
    }
    let (small, large) = (&timed[0], &timed[1]);
    println!(
        "keep path: size ratio {:.2}, time ratio {:.2} (equal when linear)",
        large.1 as f64 / small.1 as f64,
        large.2.as_secs_f64() / small.2.as_secs_f64()
    );

    for observed in ZONED {
        let body = zoned_with_observed(observed);
        let time = least_sync(&body, 5);
        println!(
            "zoned request, {} zones: {observed} observed workloads, {} bytes: {:.1} ms, {:.1} µs per workload",
            leaving::ZONES,
            body.len(),
            time.as_secs_f64() * 1e3,
            time.as_secs_f64() * 1e6 / observed as f64
        );
    }
    for leaving in LEAVING {
        let body = leaving_without_last_applied(leaving);
        let time = least_sync(&body, 5);
        println!(
            "leaving workloads: {leaving}, {} bytes: {:.1} ms, {:.1} µs per workload",
            body.len(),
            time.as_secs_f64() * 1e3,
            time.as_secs_f64() * 1e6 / leaving as f64
        );
    }
}
