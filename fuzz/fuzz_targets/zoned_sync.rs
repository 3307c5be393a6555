//! Sync of zoned requests with many observed workloads, built from the fuzzer's bytes: the
//! spec's zones (2 to 16), replicas and workload kind, and up to 1024 observed Deployments and
//! StatefulSets, each named after a zone of the spec, a zone no longer in it or the unzoned
//! workload, with or without the last-applied annotation, with the template hash kept, forged
//! or missing, the zone label kept or dropped, and any rollout counts (negative and huge ones
//! too). Arbitrary bytes rarely decode into such a request, so this target writes them itself.
//! Nothing may panic; a 200 answer must name a kind for every child and hold a status, and
//! answers at most one workload per observed or desired name and kind.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use memcached_hook::hook::Received;
use serde_json::{Value, json};

/// A zone's Deployment as Metacontroller observes it, to be renamed and edited.
const FIXTURE: &str = include_str!("../../tests/fixtures/sync/zones-rollout-started.json");
const LAST_APPLIED: &str = "metacontroller.k8s.io/last-applied-configuration";
const HASH: &str = "memcached.c5c3.io/template-hash";
const ZONE_LABEL: &str = "memcached.c5c3.io/zone";

/// The fuzzer's bytes, read one value at a time (zeros once they run out).
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
        self.0 = rest;
        first
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) << 8 | u16::from(self.u8())
    }
    fn i32(&mut self) -> i32 {
        i32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn below(&mut self, n: usize) -> usize {
        usize::from(self.u16()) % n
    }
}

fn request(b: &mut Bytes<'_>) -> Value {
    let mut request: Value = serde_json::from_str(FIXTURE).expect("the fixture is JSON");
    let observed = request["children"]["Deployment.apps/v1"]["cache-zone-a"].clone();
    let zones: Vec<String> = (0..2 + b.below(15)).map(|i| format!("zone-{i}")).collect();
    let stateful = b.u8() % 2 == 1;
    let spec = &mut request["parent"]["spec"];
    spec["zones"]["names"] = json!(zones);
    spec["replicas"] = json!(b.below(65));
    spec["workload"] = json!(if stateful {
        "StatefulSet"
    } else {
        "Deployment"
    });
    let resources = request["controller"]["spec"]["childResources"]
        .as_array_mut()
        .expect("declared kinds");
    if !resources.iter().any(|r| r["resource"] == "statefulsets") {
        resources.push(json!({"apiVersion": "apps/v1", "resource": "statefulsets"}));
    }
    let children = &mut request["children"];
    children["Deployment.apps/v1"] = json!({});
    children["StatefulSet.apps/v1"] = json!({});
    for _ in 0..b.below(1025) {
        let name = match b.u8() % 3 {
            0 => format!("cache-{}", zones[b.below(zones.len())]),
            1 => format!("cache-zone-{}", b.u16()),
            _ => "cache".to_owned(),
        };
        let kind = if b.u8() % 2 == 1 {
            "StatefulSet"
        } else {
            "Deployment"
        };
        let mut workload = observed.clone();
        workload["kind"] = json!(kind);
        workload["metadata"]["name"] = json!(&name);
        let flags = b.u8();
        let annotations = workload["metadata"]["annotations"]
            .as_object_mut()
            .expect("annotations");
        if flags & 1 == 0 {
            annotations.remove(LAST_APPLIED);
        }
        match flags >> 1 & 3 {
            0 => drop(annotations.remove(HASH)),
            1 => drop(annotations.insert(HASH.to_owned(), json!(format!("{:016x}", b.u16())))),
            _ => {}
        }
        if flags & 8 == 0 {
            let spec = &mut workload["spec"];
            for labels in ["/template/metadata/labels", "/selector/matchLabels"] {
                if let Some(labels) = spec.pointer_mut(labels).and_then(Value::as_object_mut) {
                    labels.remove(ZONE_LABEL);
                }
            }
        }
        workload["metadata"]["generation"] = json!(b.i32());
        workload["status"] = json!({"observedGeneration": b.i32(), "replicas": b.i32(),
            "readyReplicas": b.i32(), "updatedReplicas": b.i32(), "availableReplicas": b.i32()});
        children[format!("{kind}.apps/v1")][name.as_str()] = workload;
    }
    request
}

fuzz_target!(|data: &[u8]| {
    let request = request(&mut Bytes(data));
    let body = serde_json::to_vec(&request).expect("a built request encodes");
    let received = Received::decode(body.as_slice()).expect("a built request decodes");
    let now = "2026-11-22T12:00:00Z".parse().expect("a valid timestamp");
    let options = memcached_hook::Options::default();
    let Ok(response) = memcached_hook::sync(&received, now, &options) else {
        return;
    };
    let value = serde_json::to_value(&response).expect("a sync response always encodes");
    let mut named = BTreeSet::new();
    for child in value["children"].as_array().expect("children is a list") {
        let kind = child["kind"].as_str().expect("a child names its kind");
        assert!(
            child["apiVersion"].is_string(),
            "a child without apiVersion: {child}"
        );
        let name = child["metadata"]["name"].as_str().unwrap_or_default();
        assert!(named.insert((kind, name)), "{kind} {name} answered twice");
    }
    assert!(value["status"].is_object(), "no status in {value}");
});
