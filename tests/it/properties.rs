//! Property tests: generated valid and invalid specs, observed children made the way
//! Metacontroller's dynamic apply makes them, and arbitrary bytes.
//!
//! Every property runs 128 cases by default so `cargo test` stays fast; `PROPTEST_CASES=10000
//! cargo test properties` runs more.
//!
//! Generators cover every field of `src/api/spec.rs`. A valid spec is built field by field
//! from values the rules accept and then made consistent across fields (memory limit, graceful
//! shutdown, autoscaling, SASL and TLS Secrets); an invalid one is a valid spec with one to three
//! known violations written into it, each naming the field it must be reported under.
//! Observed children are the hook's own answer to a first sync, wrapped as the API server holds
//! them after Metacontroller applied them: the last-applied annotation, the `controller-uid`
//! label, the namespace, server-side defaults and a status.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use axum::http::StatusCode;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use memcached_hook::SyncError;
use memcached_hook::hook::Received;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::{Index, select, subsequence};
use proptest::test_runner::{TestCaseError, TestRunner};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::common::{LAST_APPLIED, condition, decoded, now, observed_key, try_typed, typed};
use crate::http::post_json;
use crate::service_monitor::ServiceMonitor;

const PARENT_UID: &str = "6f1c2b9e-3d4a-4f5b-9c1d-2e3f4a5b6c7d";
const SASL_SECRET: &str = "sasl-credentials";
const TLS_SECRET: &str = "tls-certificate";

/// The child kinds the hook may emit: kind, apiVersion, resource.
const KINDS: [(&str, &str, &str); 7] = [
    ("Deployment", "apps/v1", "deployments"),
    ("Service", "v1", "services"),
    ("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets"),
    (
        "HorizontalPodAutoscaler",
        "autoscaling/v2",
        "horizontalpodautoscalers",
    ),
    (
        "ServiceMonitor",
        "monitoring.coreos.com/v1",
        "servicemonitors",
    ),
    ("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies"),
    ("ConfigMap", "v1", "configmaps"),
];

/// Every child resource the hook may emit, as a CompositeController declares it.
fn all_declared() -> Vec<(&'static str, &'static str)> {
    KINDS.iter().map(|(_, a, r)| (*a, *r)).collect()
}

/// Whether a valid `spec` asks for a child of `kind`.
fn needed(kind: &str, spec: &Value) -> bool {
    match kind {
        "PodDisruptionBudget" => is_true(
            spec,
            &["highAvailability", "podDisruptionBudget", "enabled"],
        ),
        "HorizontalPodAutoscaler" => is_true(spec, &["autoscaling", "enabled"]),
        "ServiceMonitor" => {
            is_true(spec, &["monitoring", "enabled"])
                && get(spec, &["monitoring", "serviceMonitor"]).is_some()
        }
        "NetworkPolicy" => is_true(spec, &["security", "networkPolicy", "enabled"]),
        "ConfigMap" => is_true(spec, &["discovery", "configMap", "enabled"]),
        _ => true,
    }
}

type Outcome = Result<(), TestCaseError>;

/// A runner with 128 cases unless `PROPTEST_CASES` says otherwise.
fn runner() -> TestRunner {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 128;
    }
    config.failure_persistence = None;
    config.max_shrink_iters = 2048;
    TestRunner::new(config)
}

/// Runs `test` over `strategy`, failing the test with the minimal failing input.
fn check<S: Strategy>(strategy: S, test: impl Fn(S::Value) -> Outcome)
where
    S::Value: std::fmt::Debug,
{
    if let Err(failure) = runner().run(&strategy, test) {
        panic!("{failure}");
    }
}

// ---------------------------------------------------------------------------------------------
// JSON helpers
// ---------------------------------------------------------------------------------------------

/// An optional field: absent, JSON `null` (unset) or a value.
fn field(value: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Option<Value>> {
    prop_oneof![
        3 => Just(None),
        1 => Just(Some(Value::Null)),
        6 => value.prop_map(Some),
    ]
    .boxed()
}

/// An object of the fields that are present.
fn object<const N: usize>(fields: [(&str, Option<Value>); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
            .collect(),
    )
}

/// The value at `path`, `None` when absent or `null`.
fn get<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .filter(|v| !v.is_null())
}

fn is_true(value: &Value, path: &[&str]) -> bool {
    get(value, path) == Some(&Value::Bool(true))
}

/// An integer field with `0` or unset meaning `default`.
fn non_zero(value: &Value, path: &[&str], default: i64) -> i64 {
    get(value, path)
        .and_then(Value::as_i64)
        .filter(|v| *v != 0)
        .unwrap_or(default)
}

/// The object at `path`, created (replacing `null` or any non-object) as needed.
fn object_at<'a>(value: &'a mut Value, path: &[&str]) -> &'a mut Map<String, Value> {
    let mut here = value;
    for key in path {
        if !here.is_object() {
            *here = json!({});
        }
        here = here
            .as_object_mut()
            .expect("an object")
            .entry((*key).to_owned())
            .or_insert(Value::Null);
    }
    if !here.is_object() {
        *here = json!({});
    }
    here.as_object_mut().expect("an object")
}

/// Writes `new` at `path` (`None` removes the field).
fn write(value: &mut Value, path: &[&str], new: Option<Value>) {
    let (last, parents) = path.split_last().expect("a non-empty path");
    let parent = object_at(value, parents);
    match new {
        Some(v) => {
            parent.insert((*last).to_owned(), v);
        }
        None => {
            parent.remove(*last);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generators of valid specs: every field of src/api/spec.rs
// ---------------------------------------------------------------------------------------------

fn int(range: std::ops::RangeInclusive<i64>) -> BoxedStrategy<Value> {
    range.prop_map(Value::from).boxed()
}

fn text(regex: &'static str) -> BoxedStrategy<Value> {
    regex.prop_map(Value::from).boxed()
}

fn image() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(json!("memcached:1.6.38")),
        Just(json!("memcached")),
        Just(json!("registry.example:5000/memcached")),
        Just(json!("registry.example:5000/cache/memcached:1.6-alpine")),
        Just(json!(
            "memcached:1.6@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        )),
        // Tags up to 70 characters: a tag over 63 is no valid label value.
        text("[a-z][a-z0-9./-]{0,20}(:[A-Za-z0-9._-]{1,70})?"),
    ]
    .boxed()
}

fn cpu_quantity() -> BoxedStrategy<Value> {
    prop_oneof![
        (1u32..4000).prop_map(|m| json!(format!("{m}m"))),
        (1u32..64).prop_map(|c| json!(c.to_string())),
        Just(json!("0.5")),
        Just(json!("1500m")),
        Just(json!("2e3")),
    ]
    .boxed()
}

fn memory_quantity() -> BoxedStrategy<Value> {
    prop_oneof![
        (1u32..4096).prop_map(|m| json!(format!("{m}Mi"))),
        (1u32..8).prop_map(|g| json!(format!("{g}Gi"))),
        (1u32..1000).prop_map(|m| json!(format!("{m}M"))),
        (1u64..1 << 33).prop_map(|b| json!(b.to_string())),
        Just(json!("1.5Gi")),
        Just(json!("1024Ki")),
    ]
    .boxed()
}

fn quantities() -> BoxedStrategy<Value> {
    (
        field(cpu_quantity()),
        field(memory_quantity()),
        field(memory_quantity()),
    )
        .prop_map(|(cpu, memory, storage)| {
            // A resource list holds quantities only: no null values.
            object([
                ("cpu", cpu.filter(|v| !v.is_null())),
                ("memory", memory.filter(|v| !v.is_null())),
                ("ephemeral-storage", storage.filter(|v| !v.is_null())),
            ])
        })
        .boxed()
}

fn resources() -> BoxedStrategy<Value> {
    (
        field(quantities()),
        field(quantities()),
        field(vec(text("[a-z]{1,8}").prop_map(|n| json!({"name": n})), 0..2).prop_map(Value::from)),
    )
        .prop_map(|(limits, requests, claims)| {
            object([
                ("limits", limits),
                ("requests", requests),
                ("claims", claims),
            ])
        })
        .boxed()
}

/// A label or annotation key the API server accepts and the hook does not keep for itself.
fn qualified_key() -> BoxedStrategy<String> {
    "(([a-z0-9]{1,6}\\.){0,2}[a-z]{1,6}/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,8}[A-Za-z0-9])?".boxed()
}

/// A label map the API server accepts (`nodeSelector`, `podLabels`, `service.labels`,
/// `serviceMonitor.additionalLabels`, the `matchLabels` of selectors).
fn label_map() -> BoxedStrategy<Value> {
    btree_map(
        qualified_key(),
        "([A-Za-z0-9]([A-Za-z0-9._-]{0,10}[A-Za-z0-9])?)?",
        0..4,
    )
    .prop_map(|m| json!(m))
    .boxed()
}

/// `podAnnotations` and `service.annotations` the API server accepts.
fn annotation_map() -> BoxedStrategy<Value> {
    btree_map(qualified_key(), ".{0,24}", 0..4)
        .prop_map(|m| json!(m))
        .boxed()
}

fn toleration() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(json!({"operator": "Exists"})),
        (qualified_key(), "[a-z0-9]{1,8}", select(vec!["NoSchedule", "PreferNoSchedule"]))
            .prop_map(|(key, value, effect)| json!({"key": key, "operator": "Equal",
                                                   "value": value, "effect": effect})),
        (qualified_key(), 0i64..=3600).prop_map(|(key, seconds)| json!({
            "key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds})),
    ]
    .boxed()
}

fn affinity() -> BoxedStrategy<Value> {
    let term =
        |key: String| json!({"topologyKey": key, "labelSelector": {"matchLabels": {"app": "web"}}});
    (
        field(qualified_key().prop_map(|key| {
            json!({
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": ["a", "b"]}]}]}})
        })),
        field(
            (1i32..=100, qualified_key()).prop_map(move |(weight, key)| {
                json!({
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": weight, "podAffinityTerm": term(key)}]})
            }),
        ),
        field(prop_oneof![
            Just(json!({})),
            qualified_key().prop_map(move |key| json!({
                "requiredDuringSchedulingIgnoredDuringExecution": [term(key)]})),
        ]),
    )
        .prop_map(|(node, pod, anti)| {
            object([
                ("nodeAffinity", node),
                ("podAffinity", pod),
                ("podAntiAffinity", anti),
            ])
        })
        .boxed()
}

fn memcached_config() -> BoxedStrategy<Value> {
    (
        field(prop_oneof![Just(json!(0)), int(16..=65536)]),
        field(prop_oneof![Just(json!(0)), int(1..=65536)]),
        field(prop_oneof![Just(json!(0)), int(1..=128)]),
        field(prop_oneof![Just(json!("")), text("[0-9]{1,4}[km]")]),
        field(int(0..=2)),
        field(
            vec(
                prop_oneof![
                    // Not an option: memcached skips it.
                    text("[^-].{0,15}"),
                    Just(json!("--enable-largepages")),
                    Just(json!("-omodern")),
                    Just(json!("modern"))
                ],
                0..4,
            )
            .prop_map(Value::from),
        ),
    )
        .prop_map(|(mb, connections, threads, size, verbosity, extra)| {
            object([
                ("maxMemoryMB", mb),
                ("maxConnections", connections),
                ("threads", threads),
                ("maxItemSize", size),
                ("verbosity", verbosity),
                ("extraArgs", extra),
            ])
        })
        .boxed()
}

fn budget() -> BoxedStrategy<Value> {
    prop_oneof![
        int(0..=20),
        (0u32..=100).prop_map(|p| json!(format!("{p}%")))
    ]
    .boxed()
}

fn topology_spread() -> BoxedStrategy<Value> {
    (
        1i32..5,
        select(vec![
            "topology.kubernetes.io/zone",
            "kubernetes.io/hostname",
        ]),
        select(vec!["DoNotSchedule", "ScheduleAnyway"]),
        field(label_map().prop_map(|l| json!({"matchLabels": l}))),
    )
        .prop_map(|(skew, key, when, selector)| {
            object([
                ("maxSkew", Some(json!(skew))),
                ("topologyKey", Some(json!(key))),
                ("whenUnsatisfiable", Some(json!(when))),
                ("labelSelector", selector),
            ])
        })
        .boxed()
}

fn high_availability() -> BoxedStrategy<Value> {
    let pdb = (
        field(any::<bool>().prop_map(Value::from)),
        field(budget()),
        field(budget()),
    )
        .prop_map(|(enabled, min, max)| {
            object([
                ("enabled", enabled),
                ("minAvailable", min),
                ("maxUnavailable", max),
            ])
        });
    let graceful = (
        field(any::<bool>().prop_map(Value::from)),
        field(prop_oneof![Just(json!(0)), int(1..=300)]),
        field(prop_oneof![Just(json!(0)), int(1..=600)]),
    )
        .prop_map(|(enabled, delay, grace)| {
            object([
                ("enabled", enabled),
                ("preStopDelaySeconds", delay),
                ("terminationGracePeriodSeconds", grace),
            ])
        });
    (
        field(prop_oneof![Just(json!("soft")), Just(json!("hard"))]),
        field(vec(topology_spread(), 0..3).prop_map(Value::from)),
        field(pdb),
        field(graceful),
    )
        .prop_map(|(preset, spread, pdb, graceful)| {
            object([
                ("antiAffinityPreset", preset),
                ("topologySpreadConstraints", spread),
                ("podDisruptionBudget", pdb),
                ("gracefulShutdown", graceful),
            ])
        })
        .boxed()
}

fn monitoring() -> BoxedStrategy<Value> {
    let service_monitor = (
        field(label_map()),
        field(prop_oneof![Just(json!("")), text("[1-9][0-9]?[sm]")]),
        field(prop_oneof![Just(json!("")), text("[1-9][0-9]?s")]),
    )
        .prop_map(|(labels, interval, timeout)| {
            object([
                ("additionalLabels", labels),
                ("interval", interval),
                ("scrapeTimeout", timeout),
            ])
        });
    (
        field(any::<bool>().prop_map(Value::from)),
        field(image()),
        field(resources()),
        field(service_monitor),
    )
        .prop_map(|(enabled, image, resources, monitor)| {
            object([
                ("enabled", enabled),
                ("exporterImage", image),
                ("exporterResources", resources),
                ("serviceMonitor", monitor),
            ])
        })
        .boxed()
}

fn secret_ref() -> BoxedStrategy<Value> {
    field(prop_oneof![
        Just(json!("")),
        text("[a-z]([a-z0-9-]{0,20}[a-z0-9])?")
    ])
    .prop_map(|name| object([("name", name)]))
    .boxed()
}

fn network_peer() -> BoxedStrategy<Value> {
    prop_oneof![
        label_map().prop_map(|l| json!({"podSelector": {"matchLabels": l}})),
        label_map().prop_map(|l| json!({"namespaceSelector": {"matchLabels": l}})),
        (0u8..=255, 8u8..=32)
            .prop_map(|(a, bits)| json!({"ipBlock": {"cidr": format!("10.{a}.0.0/{bits}")}})),
    ]
    .boxed()
}

fn security() -> BoxedStrategy<Value> {
    let pod = (
        field(any::<bool>().prop_map(Value::from)),
        field(int(0..=65535)),
        field(int(0..=65535)),
    )
        .prop_map(|(non_root, user, group)| {
            object([
                ("runAsNonRoot", non_root),
                ("runAsUser", user),
                ("fsGroup", group),
            ])
        });
    let container = (
        field(any::<bool>().prop_map(Value::from)),
        field(any::<bool>().prop_map(Value::from)),
        field(Just(json!({"drop": ["ALL"]}))),
    )
        .prop_map(|(escalation, read_only, capabilities)| {
            object([
                ("allowPrivilegeEscalation", escalation),
                ("readOnlyRootFilesystem", read_only),
                ("capabilities", capabilities),
            ])
        });
    let sasl = (
        field(any::<bool>().prop_map(Value::from)),
        field(secret_ref()),
    )
        .prop_map(|(enabled, secret)| {
            object([("enabled", enabled), ("credentialsSecretRef", secret)])
        });
    let tls = (
        field(any::<bool>().prop_map(Value::from)),
        field(secret_ref()),
        field(any::<bool>().prop_map(Value::from)),
        field(any::<bool>().prop_map(Value::from)),
    )
        .prop_map(|(enabled, secret, client, plaintext)| {
            object([
                ("enabled", enabled),
                ("certificateSecretRef", secret),
                ("enableClientCert", client),
                ("allowPlaintext", plaintext),
            ])
        });
    let rotation = field(select(vec!["Reload", "RollingRestart"]).prop_map(Value::from));
    let network = (
        field(any::<bool>().prop_map(Value::from)),
        field(vec(network_peer(), 0..3).prop_map(Value::from)),
    )
        .prop_map(|(enabled, sources)| object([("enabled", enabled), ("allowedSources", sources)]));
    (
        field(pod),
        field(container),
        field(sasl),
        field(tls),
        field(network),
        rotation,
    )
        .prop_map(|(pod, container, sasl, tls, network, rotation)| {
            object([
                ("podSecurityContext", pod),
                ("containerSecurityContext", container),
                ("sasl", sasl),
                ("tls", tls),
                ("networkPolicy", network),
                ("secretRotation", rotation),
            ])
        })
        .boxed()
}

fn metric() -> BoxedStrategy<Value> {
    (select(vec!["cpu", "memory"]), 10i32..=95)
        .prop_map(|(name, utilization)| {
            json!({"type": "Resource", "resource": {"name": name,
                   "target": {"type": "Utilization", "averageUtilization": utilization}}})
        })
        .boxed()
}

fn autoscaling() -> BoxedStrategy<Value> {
    (
        field(any::<bool>().prop_map(Value::from)),
        field(int(1..=10)),
        field(int(1..=20)),
        field(vec(metric(), 0..3).prop_map(Value::from)),
        field((0i32..=3600).prop_map(|s| json!({"scaleDown": {"stabilizationWindowSeconds": s}}))),
    )
        .prop_map(|(enabled, min, max, metrics, behavior)| {
            object([
                ("enabled", enabled),
                ("minReplicas", min),
                ("maxReplicas", max),
                ("metrics", metrics),
                ("behavior", behavior),
            ])
        })
        .boxed()
}

/// Makes a generated spec consistent across fields, the way the rules want it. `slack` picks
/// how far above each bound the fixed value lands.
fn make_valid(spec: &mut Value, slack: u32) {
    let slack = i64::from(slack);
    if is_true(spec, &["autoscaling", "enabled"]) {
        if let Some(spec) = spec.as_object_mut() {
            spec.remove("replicas");
        }
        let a = object_at(spec, &["autoscaling"]);
        let min = a.get("minReplicas").and_then(Value::as_i64);
        match (min, a.get("maxReplicas").and_then(Value::as_i64)) {
            (_, None) => {
                a.insert(
                    "maxReplicas".into(),
                    json!(min.unwrap_or(1).max(1 + slack % 5)),
                );
            }
            (Some(min), Some(max)) if min > max => {
                a.insert("maxReplicas".into(), json!(min));
            }
            _ => {}
        }
        let metrics = get(spec, &["autoscaling", "metrics"]).and_then(Value::as_array);
        let cpu_utilization = metrics.is_none_or(|m| {
            m.is_empty()
                || m.iter().any(|m| {
                    m["resource"]["name"] == "cpu"
                        && m["resource"]["target"]["type"] == "Utilization"
                })
        });
        if cpu_utilization {
            object_at(spec, &["resources", "requests"])
                .entry("cpu")
                .or_insert(json!("100m"));
        }
    }
    if get(spec, &["resources", "limits", "memory"]).is_some() {
        let need = non_zero(spec, &["memcached", "maxMemoryMB"], 64) + 32;
        let limit = match slack % 3 {
            0 => format!("{}Mi", need + slack % 512),
            1 => ((need + slack % 512) << 20).to_string(),
            _ => format!("{}Gi", (need + 1023) / 1024 + slack % 4),
        };
        write(spec, &["resources", "limits", "memory"], Some(json!(limit)));
    }
    if is_true(spec, &["highAvailability", "gracefulShutdown", "enabled"]) {
        let path = ["highAvailability", "gracefulShutdown"];
        let delay = non_zero(spec, &[path[0], path[1], "preStopDelaySeconds"], 10);
        let grace = non_zero(
            spec,
            &[path[0], path[1], "terminationGracePeriodSeconds"],
            30,
        );
        if grace <= delay {
            object_at(spec, &path).insert(
                "terminationGracePeriodSeconds".into(),
                json!(delay + 1 + slack % 200),
            );
        }
    }
    for (block, reference, secret) in [
        ("sasl", "credentialsSecretRef", SASL_SECRET),
        ("tls", "certificateSecretRef", TLS_SECRET),
    ] {
        let named = get(spec, &["security", block, reference, "name"])
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        if is_true(spec, &["security", block, "enabled"]) && !named {
            object_at(spec, &["security", block]).insert(reference.into(), json!({"name": secret}));
        }
    }
}

/// A valid spec, every field of `MemcachedSpec` in play.
fn discovery() -> BoxedStrategy<Value> {
    field(field(any::<bool>().prop_map(Value::from)).prop_map(|e| object([("enabled", e)])))
        .prop_map(|c| object([("configMap", c)]))
        .boxed()
}

fn valid_spec() -> BoxedStrategy<Value> {
    (
        (
            field(int(0..=64)),
            field(image()),
            field(resources()),
            field(memcached_config()),
            field(high_availability()),
        ),
        (
            field(monitoring()),
            field(security()),
            field(autoscaling()),
            field(
                (field(annotation_map()), field(label_map()))
                    .prop_map(|(a, l)| object([("annotations", a), ("labels", l)])),
            ),
            field(discovery()),
        ),
        (
            field(label_map()),
            field(vec(toleration(), 0..3).prop_map(Value::from)),
            field(affinity()),
            field(text("[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?")),
            field(
                vec(
                    text("[a-z0-9]([a-z0-9.-]{0,10}[a-z0-9])?")
                        .prop_filter("a DNS subdomain", |n| {
                            n.as_str().is_some_and(|n| {
                                !n.contains("..") && !n.contains(".-") && !n.contains("-.")
                            })
                        })
                        .prop_map(|n| json!({"name": n})),
                    0..3,
                )
                .prop_map(Value::from),
            ),
            field(label_map()),
            field(annotation_map()),
        ),
        any::<u32>(),
    )
        .prop_map(
            |(
                (replicas, image, resources, memcached, ha),
                (monitoring, security, autoscaling, service, discovery),
                (node_selector, tolerations, affinity, priority, pull_secrets, labels, annotations),
                slack,
            )| {
                let mut spec = object([
                    ("replicas", replicas),
                    ("image", image),
                    ("resources", resources),
                    ("memcached", memcached),
                    ("highAvailability", ha),
                    ("monitoring", monitoring),
                    ("security", security),
                    ("autoscaling", autoscaling),
                    ("service", service),
                    ("discovery", discovery),
                    ("nodeSelector", node_selector),
                    ("tolerations", tolerations),
                    ("affinity", affinity),
                    ("priorityClassName", priority),
                    ("imagePullSecrets", pull_secrets),
                    ("podLabels", labels),
                    ("podAnnotations", annotations),
                ]);
                make_valid(&mut spec, slack);
                spec
            },
        )
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Invalid specs: known violations written into a valid spec
// ---------------------------------------------------------------------------------------------

/// One broken rule: the fields written into the spec (`None` removes one; the path `["#name"]`
/// renames the parent) and the field path the violation must be reported under.
#[derive(Clone, Debug)]
struct Violation {
    writes: Vec<(Vec<&'static str>, Option<Value>)>,
    field: &'static str,
}

fn violation(
    field: &'static str,
    writes: impl IntoIterator<Item = (&'static [&'static str], Option<Value>)>,
) -> Violation {
    Violation {
        writes: writes.into_iter().map(|(p, v)| (p.to_vec(), v)).collect(),
        field,
    }
}

fn below(min: i64) -> BoxedStrategy<i64> {
    prop_oneof![Just(min - 1), (i64::from(i32::MIN)..min)].boxed()
}

fn above(max: i64) -> BoxedStrategy<i64> {
    prop_oneof![Just(max + 1), (max + 1..=i64::from(i32::MAX))].boxed()
}

fn out_of(min: i64, max: i64) -> BoxedStrategy<Value> {
    prop_oneof![below(min), above(max)]
        .prop_map(Value::from)
        .boxed()
}

fn bad_quantity() -> BoxedStrategy<Value> {
    select(vec![
        "lots", "12XB", "1.2.3", "", "-1", "-500m", "Mi", "1 Gi", "0x10",
    ])
    .prop_map(Value::from)
    .boxed()
}

fn bad_budget() -> BoxedStrategy<Value> {
    prop_oneof![
        (-1000i64..0).prop_map(Value::from),
        (101u32..1000).prop_map(|p| json!(format!("{p}%"))),
        select(vec!["abc", "%", "50", "5 %", "-5%", "50%%", ""]).prop_map(Value::from),
    ]
    .boxed()
}

fn one_violation() -> BoxedStrategy<Violation> {
    const MB: &[&str] = &["memcached", "maxMemoryMB"];
    const CONNECTIONS: &[&str] = &["memcached", "maxConnections"];
    const THREADS: &[&str] = &["memcached", "threads"];
    const ITEM_SIZE: &[&str] = &["memcached", "maxItemSize"];
    const VERBOSITY: &[&str] = &["memcached", "verbosity"];
    const MIN_AVAILABLE: &[&str] = &["highAvailability", "podDisruptionBudget", "minAvailable"];
    const MAX_UNAVAILABLE: &[&str] = &["highAvailability", "podDisruptionBudget", "maxUnavailable"];
    const DELAY: &[&str] = &[
        "highAvailability",
        "gracefulShutdown",
        "preStopDelaySeconds",
    ];
    const GRACE: &[&str] = &[
        "highAvailability",
        "gracefulShutdown",
        "terminationGracePeriodSeconds",
    ];
    const GRACEFUL: &[&str] = &["highAvailability", "gracefulShutdown"];
    const AUTOSCALING_ON: &[&str] = &["autoscaling", "enabled"];
    const MIN_REPLICAS: &[&str] = &["autoscaling", "minReplicas"];
    const MAX_REPLICAS: &[&str] = &["autoscaling", "maxReplicas"];
    const MONITORING_ON: &[&str] = &["monitoring", "enabled"];
    const REPLICAS: &[&str] = &["replicas"];
    const EXTRA_ARGS: &[&str] = &["memcached", "extraArgs"];
    const ANNOTATIONS: &[&str] = &["service", "annotations"];
    let resource = |field: &'static str, path: &'static [&'static str]| {
        bad_quantity().prop_map(move |q| violation(field, [(path, Some(q))]))
    };
    prop_oneof![
        out_of(0, 64).prop_map(|v| violation("spec.replicas", [(REPLICAS, Some(v))])),
        Just(violation("spec.image", [(&["image"][..], Some(json!("")))])),
        resource("spec.resources.limits.memory", &["resources", "limits", "memory"]),
        resource("spec.resources.requests.cpu", &["resources", "requests", "cpu"]),
        resource(
            "spec.resources.requests.ephemeral-storage",
            &["resources", "requests", "ephemeral-storage"]
        ),
        resource(
            "spec.monitoring.exporterResources.limits.cpu",
            &["monitoring", "exporterResources", "limits", "cpu"]
        ),
        // Below any maxMemoryMB + 32Mi, whatever maxMemoryMB is.
        select(vec!["16Mi", "1Mi", "1000", "0.01Gi"]).prop_map(|q| violation(
            "spec.resources.limits.memory",
            [(&["resources", "limits", "memory"][..], Some(json!(q)))]
        )),
        prop_oneof![below(0), (1i64..16).boxed(), above(65536)]
            .prop_map(|v| violation("spec.memcached.maxMemoryMB", [(MB, Some(json!(v)))])),
        prop_oneof![below(0), above(65536)].prop_map(|v| violation(
            "spec.memcached.maxConnections",
            [(CONNECTIONS, Some(json!(v)))]
        )),
        prop_oneof![below(0), above(128)]
            .prop_map(|v| violation("spec.memcached.threads", [(THREADS, Some(json!(v)))])),
        select(vec!["1g", "m", "12", "1 m", "1M", "-1m", "1.5m", "k1"]).prop_map(|s| violation(
            "spec.memcached.maxItemSize",
            [(ITEM_SIZE, Some(json!(s)))]
        )),
        out_of(0, 2)
            .prop_map(|v| violation("spec.memcached.verbosity", [(VERBOSITY, Some(v))])),
        bad_budget().prop_map(|b| violation(
            "spec.highAvailability.podDisruptionBudget.minAvailable",
            [(MIN_AVAILABLE, Some(b))]
        )),
        bad_budget().prop_map(|b| violation(
            "spec.highAvailability.podDisruptionBudget.maxUnavailable",
            [(MAX_UNAVAILABLE, Some(b))]
        )),
        prop_oneof![below(0), above(300)].prop_map(|v| violation(
            "spec.highAvailability.gracefulShutdown.preStopDelaySeconds",
            [(DELAY, Some(json!(v)))]
        )),
        prop_oneof![below(0), above(600)].prop_map(|v| violation(
            "spec.highAvailability.gracefulShutdown.terminationGracePeriodSeconds",
            [(GRACE, Some(json!(v)))]
        )),
        (1i64..=300)
            .prop_flat_map(|delay| (Just(delay), 1..=delay))
            .prop_map(|(delay, grace)| violation(
                "spec.highAvailability.gracefulShutdown.terminationGracePeriodSeconds",
                [(
                    GRACEFUL,
                    Some(json!({"enabled": true, "preStopDelaySeconds": delay,
                                "terminationGracePeriodSeconds": grace}))
                )]
            )),
        Just(violation(
            "spec.monitoring.exporterImage",
            [
                (MONITORING_ON, Some(json!(true))),
                (&["monitoring", "exporterImage"][..], Some(json!(""))),
            ]
        )),
        select(vec![
            json!({"enabled": true}),
            json!({"enabled": true, "credentialsSecretRef": {}}),
            json!({"enabled": true, "credentialsSecretRef": {"name": ""}}),
            json!({"enabled": true, "credentialsSecretRef": null}),
        ])
        .prop_map(|sasl| violation(
            "spec.security.sasl.credentialsSecretRef.name",
            [(&["security", "sasl"][..], Some(sasl))]
        )),
        select(vec![
            json!({"enabled": true}),
            json!({"enabled": true, "enableClientCert": true, "certificateSecretRef": {"name": ""}}),
        ])
        .prop_map(|tls| violation(
            "spec.security.tls.certificateSecretRef.name",
            [(&["security", "tls"][..], Some(tls))]
        )),
        (0i64..=64).prop_map(|r| violation(
            "spec.replicas",
            [(AUTOSCALING_ON, Some(json!(true))), (REPLICAS, Some(json!(r)))]
        )),
        Just(violation(
            "spec.autoscaling.maxReplicas",
            [(AUTOSCALING_ON, Some(json!(true))), (MAX_REPLICAS, None)]
        )),
        (2i64..100)
            .prop_flat_map(|min| (Just(min), 1..min))
            .prop_map(|(min, max)| violation(
                "spec.autoscaling.minReplicas",
                [
                    (AUTOSCALING_ON, Some(json!(true))),
                    (MIN_REPLICAS, Some(json!(min))),
                    (MAX_REPLICAS, Some(json!(max))),
                ]
            )),
        below(1).prop_map(|v| violation(
            "spec.autoscaling.minReplicas",
            [(MIN_REPLICAS, Some(json!(v)))]
        )),
        below(1).prop_map(|v| violation(
            "spec.autoscaling.maxReplicas",
            [(MAX_REPLICAS, Some(json!(v)))]
        )),
        Just(violation(
            "spec.resources.requests.cpu",
            [
                (AUTOSCALING_ON, Some(json!(true))),
                (&["autoscaling", "metrics"][..], Some(json!([]))),
                (&["resources", "requests", "cpu"][..], None),
            ]
        )),
        select(vec![
            "My-Cache".to_owned(),
            "1cache".to_owned(),
            "cache-".to_owned(),
            "ca_che".to_owned(),
            "cache.shop".to_owned(),
            String::new(),
            "a".repeat(64),
        ])
        .prop_map(|name| violation("metadata.name", [(&["#name"][..], Some(json!(name)))])),
        // Bounds of free-form strings, lists and maps (src/api/spec.rs `bounds`).
        (1025usize..=4096).prop_map(|n| violation(
            "spec.image",
            [(&["image"][..], Some(json!("i".repeat(n))))]
        )),
        (65usize..=200).prop_map(|n| violation(
            "spec.memcached.extraArgs",
            [(EXTRA_ARGS, Some(json!(vec!["-v"; n])))]
        )),
        (1025usize..=4096).prop_map(|n| violation(
            "spec.memcached.extraArgs[0]",
            [(EXTRA_ARGS, Some(json!(["a".repeat(n)])))]
        )),
        (64usize..=100).prop_map(|n| violation(
            "spec.monitoring.serviceMonitor.additionalLabels.team",
            [(
                &["monitoring", "serviceMonitor", "additionalLabels", "team"][..],
                Some(json!("t".repeat(n)))
            )]
        )),
        (318usize..=400).prop_map(|n| violation(
            "spec.service.annotations",
            [(ANNOTATIONS, Some(json!({"k".repeat(n): "v"})))]
        )),
        (65usize..=80).prop_map(|n| violation(
            "spec.service.annotations",
            [(
                ANNOTATIONS,
                Some(Value::Object(
                    (0..n).map(|i| (format!("a{i}"), json!("v"))).collect()
                ))
            )]
        )),
        (254usize..=300).prop_map(|n| violation(
            "spec.security.tls.certificateSecretRef.name",
            [(
                &["security", "tls", "certificateSecretRef", "name"][..],
                Some(json!("s".repeat(n)))
            )]
        )),
        // The hook's own labels and annotations, syntax and bounds of the new fields.
        (select(OWN_LABELS.to_vec()), "[a-z0-9]{0,8}").prop_map(|(key, value)| Violation {
            writes: vec![(vec!["podLabels", key], Some(json!(value)))],
            field: "spec.podLabels",
        }),
        (select(OWN_LABELS[..3].to_vec()), "[a-z0-9]{0,8}").prop_map(|(key, value)| Violation {
            writes: vec![(vec!["service", "labels", key], Some(json!(value)))],
            field: "spec.service.labels",
        }),
        select(vec!["memcached.c5c3.io/secret-hash", "memcached.c5c3.io/restart-trigger",
                    "memcached.c5c3.io/x"])
        .prop_map(|key| Violation {
            writes: vec![(vec!["podAnnotations", key], Some(json!("1")))],
            field: "spec.podAnnotations",
        }),
        select(vec!["a/b/c", "-team", "team-", "a b", "Example.com/x", "/x"]).prop_map(|key| Violation {
            writes: vec![(vec!["podLabels", key], Some(json!("v")))],
            field: "spec.podLabels",
        }),
        select(vec!["cache pool", "-x", "x-", "a/b"]).prop_map(|value| violation(
            "spec.nodeSelector.pool",
            [(&["nodeSelector", "pool"][..], Some(json!(value)))]
        )),
        (33usize..=60).prop_map(|n| violation(
            "spec.tolerations",
            [(&["tolerations"][..], Some(json!(vec![json!({"operator": "Exists"}); n])))]
        )),
        (17usize..=40).prop_map(|n| violation(
            "spec.imagePullSecrets",
            [(&["imagePullSecrets"][..], Some(json!(vec![json!({"name": "r"}); n])))]
        )),
        select(vec!["", "Registry", "a_b", "a..b"]).prop_map(|name| violation(
            "spec.imagePullSecrets[0].name",
            [(&["imagePullSecrets"][..], Some(json!([{"name": name}])))]
        )),
        select(vec!["Cache", "cache critical", "-cache", "c".repeat(254).leak() as &str])
            .prop_map(|name| violation(
                "spec.priorityClassName",
                [(&["priorityClassName"][..], Some(json!(name)))]
            )),
        (17usize..=30).prop_map(|n| violation(
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution",
            [(
                &["affinity", "podAntiAffinity"][..],
                Some(json!({"preferredDuringSchedulingIgnoredDuringExecution":
                    vec![json!({"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}); n]}))
            )]
        )),
    ]
    .boxed()
}

/// The labels the hook writes on the pods (`podLabels` may not set them).
const OWN_LABELS: [&str; 4] = [
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
];

fn related(a: &[&str], b: &[&str]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// Writes `violations` into `spec` (renaming `name` for a name violation) and returns the field
/// paths that must be reported: those of every violation no later one touched.
fn apply(spec: &mut Value, name: &mut String, violations: &[Violation]) -> Vec<&'static str> {
    let mut expected = Vec::new();
    for (i, v) in violations.iter().enumerate() {
        for (path, value) in &v.writes {
            if path[..] == ["#name"] {
                *name = value
                    .as_ref()
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
            } else {
                write(spec, path, value.clone());
            }
        }
        let overwritten = violations[i + 1..].iter().any(|later| {
            later
                .writes
                .iter()
                .any(|(p, _)| v.writes.iter().any(|(q, _)| related(p, q)))
        });
        if !overwritten {
            expected.push(v.field);
        }
    }
    expected
}

// ---------------------------------------------------------------------------------------------
// Requests and observed children
// ---------------------------------------------------------------------------------------------

/// Everything about a request except the spec.
#[derive(Clone, Debug)]
struct Context {
    name: String,
    namespace: String,
    api_version: &'static str,
    /// Hook API v2 keys children by `namespace/name`.
    v2: bool,
    /// Declared child resources, in the CompositeController's order.
    declared: Vec<(&'static str, &'static str)>,
    restart_trigger: Option<String>,
    finalizing: bool,
    /// Whether the SASL and TLS Secrets are among the related objects.
    secrets: bool,
    /// Observed Deployment: ready, updated and total pods, and replicas an HPA may have set.
    rollout: (i32, i32, i32, Option<i32>),
}

fn context() -> BoxedStrategy<Context> {
    let mut choices = all_declared();
    // A resource the hook never emits.
    choices.push(("apps/v1", "statefulsets"));
    let declared = (subsequence(choices, 0..=8), any::<bool>()).prop_map(|(mut d, reverse)| {
        if reverse {
            d.reverse();
        }
        d
    });
    (
        "[a-z]([a-z0-9-]{0,30}[a-z0-9])?",
        "[a-z]([a-z0-9-]{0,10}[a-z0-9])?",
        select(vec![
            "memcached.c5c3.io/v1beta1",
            "memcached.c5c3.io/v1alpha1",
        ]),
        any::<bool>(),
        prop_oneof![
            // Mostly every kind, as metacontroller/ declares them.
            3 => Just(all_declared()),
            2 => declared,
        ],
        prop::option::of("[0-9TZ:-]{0,20}"),
        any::<bool>(),
        any::<bool>(),
        (0i32..=12, 0i32..=12, 0i32..=12, prop::option::of(0i32..=20)),
    )
        .prop_map(
            |(
                name,
                namespace,
                api_version,
                v2,
                declared,
                restart_trigger,
                finalizing,
                secrets,
                rollout,
            )| {
                Context {
                    name,
                    namespace,
                    api_version,
                    v2,
                    declared,
                    restart_trigger,
                    finalizing,
                    secrets,
                    rollout,
                }
            },
        )
        .boxed()
}

fn kind_key(api_version: &str, resource: &str) -> String {
    KINDS
        .iter()
        .find(|(_, a, r)| *a == api_version && *r == resource)
        .map_or_else(
            || format!("StatefulSet.{api_version}"),
            |(kind, api, _)| format!("{kind}.{api}"),
        )
}

/// A sync request as Metacontroller sends it.
fn request(
    ctx: &Context,
    name: &str,
    spec: &Value,
    observed: &[Value],
    status: Option<&Value>,
) -> Value {
    let mut children = Map::new();
    for (api_version, resource) in &ctx.declared {
        children.insert(kind_key(api_version, resource), json!({}));
    }
    for child in observed {
        let (key, child_name) = observed_key(child);
        let entry = if ctx.v2 {
            format!("{}/{child_name}", ctx.namespace)
        } else {
            child_name
        };
        if let Some(Value::Object(map)) = children.get_mut(&key) {
            map.insert(entry, child.clone());
        }
    }
    let mut metadata = json!({"name": name, "namespace": ctx.namespace, "uid": PARENT_UID,
                              "generation": if observed.is_empty() { 1 } else { 2 }});
    if let Some(trigger) = &ctx.restart_trigger {
        metadata["annotations"] = json!({"memcached.c5c3.io/restart-trigger": trigger});
    }
    if ctx.finalizing {
        metadata["deletionTimestamp"] = json!("2026-11-22T11:00:00Z");
    }
    let mut parent = json!({"apiVersion": ctx.api_version, "kind": "Memcached", "metadata": metadata, "spec": spec});
    if let Some(status) = status {
        parent["status"] = status.clone();
    }
    let mut related = json!({"Secret.v1": {}});
    if ctx.secrets {
        for (secret, key) in [(SASL_SECRET, "password-file"), (TLS_SECRET, "tls.crt")] {
            related["Secret.v1"][secret] = json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": secret, "namespace": ctx.namespace},
                "data": {key: "c2VjcmV0"}});
        }
    }
    let child_resources: Vec<Value> = ctx
        .declared
        .iter()
        .map(|(a, r)| json!({"apiVersion": a, "resource": r, "updateStrategy": {"method": "InPlace"}}))
        .collect();
    json!({
        "controller": {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
                       "metadata": {"name": "memcached-controller"},
                       "spec": {"parentResource": {"apiVersion": ctx.api_version, "resource": "memcacheds"},
                                "childResources": child_resources, "generateSelector": true}},
        "parent": parent,
        "children": children,
        "related": related,
        "finalizing": ctx.finalizing,
    })
}

/// What the API server holds after Metacontroller's dynamic apply of the desired `child`.
fn observe(child: &Value, index: usize, ctx: &Context) -> Value {
    let mut applied = child.clone();
    applied["metadata"]["labels"]["controller-uid"] = json!(PARENT_UID);
    let kind = applied["kind"].as_str().unwrap_or_default().to_owned();
    let mut live = crate::common::applied(&applied, &json!(ctx.namespace));
    let meta = &mut live["metadata"];
    meta["uid"] = json!(format!("a1a1a1a1-0000-4000-8000-{index:012}"));
    meta["resourceVersion"] = json!((48100 + index).to_string());
    meta["generation"] = json!(2);
    meta["creationTimestamp"] = json!("2026-11-22T10:00:00Z");
    meta["ownerReferences"] = json!([{"apiVersion": ctx.api_version, "kind": "Memcached",
        "name": ctx.name, "uid": PARENT_UID, "controller": true, "blockOwnerDeletion": true}]);
    meta["managedFields"] = json!([{"manager": "metacontroller", "operation": "Update",
        "apiVersion": applied["apiVersion"], "time": "2026-11-22T10:01:12Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {}}}]);
    match kind.as_str() {
        "Deployment" => {
            let (ready, updated, total, hpa) = ctx.rollout;
            meta["annotations"]["deployment.kubernetes.io/revision"] = json!("2");
            let spec = &mut live["spec"];
            if let Some(replicas) = hpa {
                spec["replicas"] = json!(replicas);
            }
            if spec["replicas"].is_null() {
                spec["replicas"] = json!(1);
            }
            spec["revisionHistoryLimit"] = json!(10);
            spec["progressDeadlineSeconds"] = json!(600);
            let pod = &mut spec["template"]["spec"];
            pod["restartPolicy"] = json!("Always");
            pod["dnsPolicy"] = json!("ClusterFirst");
            pod["schedulerName"] = json!("default-scheduler");
            if pod["securityContext"].is_null() {
                pod["securityContext"] = json!({});
            }
            if pod["terminationGracePeriodSeconds"].is_null() {
                pod["terminationGracePeriodSeconds"] = json!(30);
            }
            if let Some(containers) = pod["containers"].as_array_mut() {
                for c in containers {
                    c["imagePullPolicy"] = json!("IfNotPresent");
                    c["terminationMessagePath"] = json!("/dev/termination-log");
                    c["terminationMessagePolicy"] = json!("File");
                    if c["resources"].is_null() {
                        c["resources"] = json!({});
                    }
                }
            }
            let mut status =
                json!({"observedGeneration": 2, "replicas": total, "updatedReplicas": updated});
            if ready > 0 {
                status["readyReplicas"] = json!(ready);
                status["availableReplicas"] = json!(ready);
            }
            live["status"] = status;
        }
        "Service" => {
            let spec = &mut live["spec"];
            spec["type"] = json!("ClusterIP");
            spec["clusterIPs"] = json!(["None"]);
            spec["ipFamilies"] = json!(["IPv4"]);
            spec["ipFamilyPolicy"] = json!("SingleStack");
            spec["sessionAffinity"] = json!("None");
            live["status"] = json!({"loadBalancer": {}});
        }
        _ => {
            live["status"] = json!({"observedGeneration": 1, "currentHealthy": 1, "desiredHealthy": 1,
                                    "disruptionsAllowed": 0, "expectedPods": 1});
        }
    }
    live
}

/// Decodes `body` like the server and syncs it at the tests' fixed time.
fn sync_bytes(body: &[u8]) -> Result<Result<Value, SyncError>, String> {
    let received = Received::decode(body).map_err(|e| e.to_string())?;
    // With the body, as the server answers (the old workload of a switch under server-side
    // apply and the kept children of an invalid spec are read from it).
    let options = memcached_hook::Options::default();
    Ok(memcached_hook::sync(&received, now(), &options)
        .map(|r| serde_json::to_value(&r).expect("the response encodes")))
}

fn sync_value(request: &Value) -> Result<Value, SyncError> {
    let body = serde_json::to_vec(request).expect("a generated request encodes");
    sync_bytes(&body).expect("a generated request decodes")
}

/// A scenario of two generations: the children of `before` are observed, `spec` is current.
#[derive(Clone, Debug)]
struct Scenario {
    ctx: Context,
    before: Value,
    spec: Value,
}

impl Scenario {
    /// The first sync of `before`: the desired children and the status it wrote.
    fn first(&self) -> Value {
        sync_value(&request(&self.ctx, &self.ctx.name, &self.before, &[], None))
            .expect("a valid spec syncs")
    }

    /// Observed children: the first sync's answer as the API server holds it.
    fn observed(&self) -> (Vec<Value>, Value) {
        let first = self.first();
        let observed = first["children"]
            .as_array()
            .expect("children")
            .iter()
            .enumerate()
            .map(|(i, c)| observe(c, i + 1, &self.ctx))
            .collect();
        (observed, first["status"].clone())
    }

    /// The second-generation request with `spec` and parent `name`.
    fn request_with(&self, name: &str, spec: &Value) -> Value {
        let (observed, status) = self.observed();
        request(&self.ctx, name, spec, &observed, Some(&status))
    }
}

fn scenario() -> BoxedStrategy<Scenario> {
    (context(), valid_spec(), valid_spec())
        .prop_map(|(ctx, before, spec)| Scenario { ctx, before, spec })
        .boxed()
}

fn children(response: &Value) -> &[Value] {
    response["children"].as_array().map_or(&[], Vec::as_slice)
}

/// Whether every label of `small` is in `big` with the same value (neither may be absent).
fn is_subset(small: Option<&Labels>, big: Option<&Labels>) -> bool {
    small
        .zip(big)
        .is_some_and(|(small, big)| small.iter().all(|(k, v)| big.get(k) == Some(v)))
}

type Labels = BTreeMap<String, String>;

/// The selector and the pod template's labels of a Deployment.
fn selector_and_pod_labels(deployment: Deployment) -> (LabelSelector, Option<Labels>) {
    let spec = deployment.spec.expect("spec");
    let pod_labels = spec.template.metadata.and_then(|m| m.labels);
    (spec.selector, pod_labels)
}

fn round_trip<T: DeserializeOwned + Serialize>(child: &Value) -> Outcome {
    crate::common::round_trip::<T>(child)
        .map(drop)
        .map_err(TestCaseError::fail)
}

// ---------------------------------------------------------------------------------------------
// Properties over valid specs
// ---------------------------------------------------------------------------------------------

#[test]
fn generated_valid_specs_are_valid() {
    check((context(), valid_spec()), |(ctx, spec)| {
        let result = sync_value(&request(&ctx, &ctx.name, &spec, &[], None));
        prop_assert!(result.is_ok(), "{spec}: {:?}", result.err());
        Ok(())
    });
}

#[test]
fn same_input_gives_the_same_bytes_whatever_the_key_format() {
    check(scenario(), |s| {
        let body = serde_json::to_vec(&s.request_with(&s.ctx.name, &s.spec)).expect("encodes");
        let encode = |body: &[u8]| {
            let received = Received::decode(body).expect("decodes");
            let response =
                memcached_hook::sync(&received, now(), &Default::default()).expect("valid");
            serde_json::to_vec(&response).expect("encodes")
        };
        let first = encode(&body);
        prop_assert_eq!(&first, &encode(&body));
        // Hook API v1 and v2 differ only in the children's keys: same answer.
        let mut other = s.clone();
        other.ctx.v2 = !s.ctx.v2;
        let other_body =
            serde_json::to_vec(&other.request_with(&s.ctx.name, &s.spec)).expect("encodes");
        prop_assert_eq!(&first, &encode(&other_body));
        Ok(())
    });
}

#[test]
fn deployment_selector_is_within_the_pod_labels_and_never_changes() {
    check(scenario(), |s| {
        let response = sync_value(&s.request_with(&s.ctx.name, &s.spec)).expect("valid");
        let Some(deployment) = try_typed::<Deployment>(&response) else {
            prop_assert!(!s.ctx.declared.contains(&("apps/v1", "deployments")));
            return Ok(());
        };
        let (selector, pod_labels) = selector_and_pod_labels(deployment);
        let labels = selector.match_labels.as_ref();
        prop_assert!(
            is_subset(labels, pod_labels.as_ref()),
            "{labels:?} not in {pod_labels:?}"
        );
        prop_assert!(
            selector.match_expressions.is_none(),
            "labels only: {selector:?}"
        );
        // The selector is immutable: the one of the earlier generation, of another spec.
        let before = typed::<Deployment>(&s.first());
        prop_assert_eq!(&selector, &selector_and_pod_labels(before).0);
        // The Service and the PodDisruptionBudget select the same pods.
        if let Some(service) = try_typed::<Service>(&response) {
            let service = service.spec.and_then(|s| s.selector);
            prop_assert!(is_subset(service.as_ref(), pod_labels.as_ref()));
        }
        if let Some(pdb) = try_typed::<PodDisruptionBudget>(&response) {
            let pdb = pdb.spec.and_then(|s| s.selector?.match_labels);
            prop_assert_eq!(pdb.as_ref(), labels);
        }
        Ok(())
    });
}

/// Whatever `podLabels` holds (the selector's keys with any value, keys and values of
/// any syntax), the Deployment keeps its selector and the pods carry it unchanged; a label the
/// hook owns is an invalid spec (observed children kept), never a merge.
#[test]
fn pod_labels_never_change_the_selector() {
    let key = prop_oneof![
        select(OWN_LABELS.to_vec()).prop_map(str::to_owned),
        qualified_key(),
        ".{0,20}".boxed(),
    ];
    let value = prop_oneof![
        Just("memcached".to_owned()),
        Just("other".to_owned()),
        ".{0,20}".boxed(),
    ];
    let with_labels = (scenario(), btree_map(key, value, 0..6)).prop_map(|(mut s, labels)| {
        write(&mut s.spec, &["podLabels"], Some(json!(labels)));
        (s, labels)
    });
    check(with_labels, |(s, labels)| {
        let first = s.first();
        let earlier = try_typed::<Deployment>(&first).map(|d| selector_and_pod_labels(d).0);
        let own = labels.keys().any(|k| OWN_LABELS.contains(&k.as_str()));
        let Ok(response) = sync_value(&s.request_with(&s.ctx.name, &s.spec)) else {
            // A 422: Metacontroller changes nothing.
            return Ok(());
        };
        if let Some(deployment) = try_typed::<Deployment>(&response) {
            let (selector, pod_labels) = selector_and_pod_labels(deployment);
            prop_assert_eq!(Some(&selector), earlier.as_ref());
            prop_assert!(
                is_subset(selector.match_labels.as_ref(), pod_labels.as_ref()),
                "{selector:?} not in {pod_labels:?}"
            );
        }
        if own {
            let degraded = condition(&response, "Degraded");
            prop_assert_eq!(&degraded.reason, "InvalidSpec");
            prop_assert!(degraded.message.contains("spec.podLabels"));
        }
        Ok(())
    });
}

#[test]
fn every_emitted_kind_is_declared_and_every_needed_declared_kind_is_emitted() {
    check(scenario(), |s| {
        let response = sync_value(&s.request_with(&s.ctx.name, &s.spec)).expect("valid");
        for child in children(&response) {
            let known = KINDS.iter().find(|(kind, _, _)| child["kind"] == *kind);
            let Some((_, api_version, resource)) = known else {
                return Err(TestCaseError::fail(format!("unexpected kind: {child}")));
            };
            prop_assert_eq!(&child["apiVersion"], api_version);
            prop_assert!(
                s.ctx.declared.contains(&(api_version, resource)),
                "{} is not declared in {:?}",
                child["kind"],
                s.ctx.declared
            );
        }
        for (kind, api_version, resource) in KINDS {
            let needed = needed(kind, &s.spec);
            let declared = s.ctx.declared.contains(&(api_version, resource));
            let count = children(&response)
                .iter()
                .filter(|c| c["kind"] == kind)
                .count();
            prop_assert_eq!(count, usize::from(needed && declared), "{}", kind);
        }
        Ok(())
    });
}

#[test]
fn a_pod_disruption_budget_never_has_both_budgets() {
    let with_pdb = (scenario(), field(budget()), field(budget())).prop_map(|(mut s, min, max)| {
        // Both, either or neither budget set, with the PDB on.
        let pdb = object([
            ("enabled", Some(json!(true))),
            ("minAvailable", min),
            ("maxUnavailable", max),
        ]);
        write(
            &mut s.spec,
            &["highAvailability", "podDisruptionBudget"],
            Some(pdb),
        );
        s
    });
    check(with_pdb, |s| {
        let response = sync_value(&s.request_with(&s.ctx.name, &s.spec)).expect("valid");
        if let Some(pdb) = try_typed::<PodDisruptionBudget>(&response) {
            let spec = pdb.spec.expect("spec");
            let budgets = usize::from(spec.min_available.is_some())
                + usize::from(spec.max_unavailable.is_some());
            prop_assert_eq!(budgets, 1, "{:?}", spec);
            let set_min = get(
                &s.spec,
                &["highAvailability", "podDisruptionBudget", "minAvailable"],
            );
            if let Some(min) = set_min {
                prop_assert_eq!(
                    spec.min_available,
                    Some(decoded(min.clone())),
                    "minAvailable wins"
                );
            }
        }
        Ok(())
    });
}

#[test]
fn every_emitted_child_survives_the_typed_round_trip() {
    check(scenario(), |s| {
        let response = sync_value(&s.request_with(&s.ctx.name, &s.spec)).expect("valid");
        for child in children(&response) {
            match child["kind"].as_str() {
                Some("Deployment") => round_trip::<Deployment>(child)?,
                Some("Service") => round_trip::<Service>(child)?,
                Some("PodDisruptionBudget") => round_trip::<PodDisruptionBudget>(child)?,
                Some("HorizontalPodAutoscaler") => round_trip::<HorizontalPodAutoscaler>(child)?,
                Some("NetworkPolicy") => round_trip::<NetworkPolicy>(child)?,
                Some("ServiceMonitor") => round_trip::<ServiceMonitor>(child)?,
                Some("ConfigMap") => round_trip::<ConfigMap>(child)?,
                _ => return Err(TestCaseError::fail(format!("unexpected child {child}"))),
            }
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// Properties over invalid specs
// ---------------------------------------------------------------------------------------------

fn invalid() -> BoxedStrategy<(Scenario, Vec<Violation>)> {
    (scenario(), vec(one_violation(), 1..=3)).boxed()
}

/// The objects the observed children's last-applied annotations hold, sorted.
fn last_applied(observed: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = observed
        .iter()
        .map(|c| {
            serde_json::from_str(
                c["metadata"]["annotations"][LAST_APPLIED]
                    .as_str()
                    .expect("set"),
            )
            .expect("JSON")
        })
        .collect();
    out.sort_by_key(ToString::to_string);
    out
}

#[test]
fn an_invalid_spec_keeps_every_observed_child_as_last_applied() {
    check(invalid(), |(s, violations)| {
        let mut spec = s.spec.clone();
        let mut name = s.ctx.name.clone();
        let expected = apply(&mut spec, &mut name, &violations);
        let (observed, status) = s.observed();
        let body = request(&s.ctx, &name, &spec, &observed, Some(&status));
        match sync_value(&body) {
            Ok(response) => {
                prop_assert!(!observed.is_empty(), "200 with nothing to keep: {response}");
                let mut kept = children(&response).to_vec();
                kept.sort_by_key(ToString::to_string);
                prop_assert_eq!(kept, last_applied(&observed));
                let degraded = condition(&response, "Degraded");
                prop_assert_eq!(&degraded.status, "True");
                prop_assert_eq!(&degraded.reason, "InvalidSpec");
                let message = &degraded.message;
                for field in &expected {
                    prop_assert!(message.contains(field), "{field} not in {message}");
                }
            }
            Err(SyncError::InvalidSpec { violations, .. }) => {
                prop_assert!(observed.is_empty(), "422 although every child can be kept");
                let fields: Vec<&str> = violations.iter().map(|v| v.field.as_str()).collect();
                for field in &expected {
                    prop_assert!(fields.contains(field), "{field} not in {fields:?}");
                }
            }
            Err(other) => return Err(TestCaseError::fail(format!("{other}"))),
        }
        Ok(())
    });
}

/// `apiVersion`, `kind` and name: what Metacontroller matches desired and observed children by.
fn identity(child: &Value) -> (Value, Value, Value) {
    (
        child["apiVersion"].clone(),
        child["kind"].clone(),
        child["metadata"]["name"].clone(),
    )
}

#[derive(Clone, Copy, Debug)]
enum Tamper {
    Name,
    ApiVersion,
    NoApiVersion,
    Kind,
    Namespace,
}

/// A last-applied annotation edited by hand (anyone who may edit the child can) must not make
/// an invalid spec's answer name other children than those observed: Metacontroller would
/// delete the observed child and create the stranger, so the answer must be that very child or
/// a 422. Found by the decode_sync fuzz target (docs/reliability.md, "Findings").
#[test]
fn an_invalid_spec_never_answers_children_other_than_those_observed() {
    let tampers = select(vec![
        Tamper::Name,
        Tamper::ApiVersion,
        Tamper::NoApiVersion,
        Tamper::Kind,
        Tamper::Namespace,
    ]);
    check(
        (invalid(), any::<Index>(), tampers),
        |((s, violations), which, tamper)| {
            let mut spec = s.spec.clone();
            let mut name = s.ctx.name.clone();
            apply(&mut spec, &mut name, &violations);
            let (mut observed, status) = s.observed();
            if observed.is_empty() {
                return Ok(());
            }
            let i = which.index(observed.len());
            let child = &mut observed[i];
            let text = child["metadata"]["annotations"][LAST_APPLIED]
                .as_str()
                .expect("set");
            let mut applied: Value = serde_json::from_str(text).expect("JSON");
            match tamper {
                Tamper::Name => applied["metadata"]["name"] = json!("someone-else"),
                Tamper::ApiVersion => applied["apiVersion"] = json!("example.com/v1"),
                Tamper::NoApiVersion => {
                    applied.as_object_mut().map(|o| o.remove("apiVersion"));
                }
                Tamper::Kind => applied["kind"] = json!("ConfigMap"),
                Tamper::Namespace => applied["metadata"]["namespace"] = json!("elsewhere"),
            }
            child["metadata"]["annotations"][LAST_APPLIED] = json!(applied.to_string());
            let body = request(&s.ctx, &name, &spec, &observed, Some(&status));
            if let Ok(response) = sync_value(&body) {
                let mut want: Vec<_> = observed.iter().map(identity).collect();
                let mut got: Vec<_> = children(&response).iter().map(identity).collect();
                want.sort_by_key(|i| format!("{i:?}"));
                got.sort_by_key(|i| format!("{i:?}"));
                prop_assert_eq!(got, want);
                for kept in children(&response) {
                    let ns = &kept["metadata"]["namespace"];
                    prop_assert!(ns.is_null() || *ns == json!(s.ctx.namespace), "{kept}");
                }
            }
            Ok(())
        },
    );
}

#[test]
fn an_invalid_spec_without_last_applied_configuration_is_refused() {
    check((invalid(), any::<Index>()), |((s, violations), which)| {
        let mut spec = s.spec.clone();
        let mut name = s.ctx.name.clone();
        let expected = apply(&mut spec, &mut name, &violations);
        // Server-side apply (or a first sync): no annotation to keep, so nothing may be answered.
        let (mut observed, status) = s.observed();
        if !observed.is_empty() {
            let i = which.index(observed.len());
            if let Some(a) = observed[i]["metadata"]["annotations"].as_object_mut() {
                a.remove(LAST_APPLIED);
            }
        }
        for observed in [&observed[..], &[]] {
            let body = request(&s.ctx, &name, &spec, observed, Some(&status));
            match sync_value(&body) {
                Err(SyncError::InvalidSpec { violations, .. }) => {
                    let fields: Vec<&str> = violations.iter().map(|v| v.field.as_str()).collect();
                    for field in &expected {
                        prop_assert!(fields.contains(field), "{field} not in {fields:?}");
                    }
                }
                other => return Err(TestCaseError::fail(format!("expected 422, got {other:?}"))),
            }
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// Arbitrary bytes and arbitrary JSON
// ---------------------------------------------------------------------------------------------

fn fixtures() -> &'static [(String, Vec<u8>)] {
    static FIXTURES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sync");
        let mut all: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .expect("fixtures")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|p| {
                (
                    p.display().to_string(),
                    std::fs::read(&p).expect("readable"),
                )
            })
            .collect();
        all.sort();
        assert!(!all.is_empty(), "no fixtures in {dir}");
        all
    })
}

/// What `POST /sync` answers to `body`: status and JSON body.
fn post(runtime: &tokio::runtime::Runtime, body: Vec<u8>) -> (StatusCode, Value) {
    runtime.block_on(post_json(body))
}

/// Decode + sync of `body` never panics, and the server answers 200 exactly when the library
/// does, with JSON either way and never a 5xx.
fn decode_and_post(runtime: &tokio::runtime::Runtime, body: Vec<u8>) -> Outcome {
    let library = sync_bytes(&body);
    let (status, answer) = post(runtime, body);
    match library {
        Ok(Ok(response)) => {
            prop_assert_eq!(status, StatusCode::OK);
            prop_assert_eq!(&answer["children"], &response["children"]);
            for child in children(&answer) {
                prop_assert!(
                    child["kind"].is_string() && child["apiVersion"].is_string(),
                    "{child}"
                );
            }
        }
        Ok(Err(_)) | Err(_) => {
            prop_assert!(
                status == StatusCode::BAD_REQUEST || status == StatusCode::UNPROCESSABLE_ENTITY,
                "{status} {answer}"
            );
            prop_assert!(answer["error"].is_string(), "{answer}");
        }
    }
    Ok(())
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

#[test]
fn decode_of_arbitrary_bytes_never_panics() {
    let runtime = current_thread();
    check(vec(any::<u8>(), 0..2048), |bytes| {
        decode_and_post(&runtime, bytes)
    });
}

#[derive(Clone, Debug)]
enum Edit {
    Delete(Index),
    Insert(Index, u8),
    Replace(Index, u8),
    Truncate(Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<Index>().prop_map(Edit::Delete),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<Index>(), select(b"{}[]\",:0-9nte\\\x00\xff".to_vec()))
            .prop_map(|(i, b)| Edit::Replace(i, b)),
        any::<Index>().prop_map(Edit::Truncate),
    ]
}

#[test]
fn decode_of_mangled_fixtures_never_panics() {
    let runtime = current_thread();
    check((any::<Index>(), vec(edit(), 1..8)), |(which, edits)| {
        let (_, original) = &fixtures()[which.index(fixtures().len())];
        let mut bytes = original.clone();
        for edit in edits {
            let len = bytes.len().max(1);
            match edit {
                Edit::Delete(i) if !bytes.is_empty() => {
                    bytes.remove(i.index(len));
                }
                Edit::Insert(i, b) => bytes.insert(i.index(len + 1).min(bytes.len()), b),
                Edit::Replace(i, b) if !bytes.is_empty() => bytes[i.index(len)] = b,
                Edit::Truncate(i) => bytes.truncate(i.index(len)),
                _ => {}
            }
        }
        decode_and_post(&runtime, bytes)
    });
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        select(vec![
            "",
            "50%",
            "1m",
            "128Mi",
            "apps/v1",
            "Deployment",
            "v1",
            "true",
            "-1"
        ])
        .prop_map(Value::from),
    ];
    let key = prop_oneof![
        select(vec![
            "apiVersion",
            "kind",
            "metadata",
            "name",
            "namespace",
            "spec",
            "status",
            "enabled",
            "replicas",
            "image",
            "memcached",
            "maxMemoryMB",
            "minAvailable",
            "maxUnavailable",
            "conditions",
            "annotations",
            "labels",
            "childResources",
            "resource",
            "limits",
            "memory",
            LAST_APPLIED,
        ])
        .prop_map(str::to_owned),
        "[a-zA-Z]{1,8}",
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(key.clone(), inner, 0..6)
                .prop_map(|m: BTreeMap<String, Value>| { Value::Object(m.into_iter().collect()) }),
        ]
    })
}

#[test]
fn arbitrary_json_anywhere_in_a_request_never_panics() {
    const SPOTS: &[&[&str]] = &[
        &["parent", "spec"],
        &["parent", "spec", "replicas"],
        &["parent", "spec", "image"],
        &["parent", "spec", "resources"],
        &["parent", "spec", "resources", "limits", "memory"],
        &["parent", "spec", "memcached"],
        &["parent", "spec", "memcached", "extraArgs"],
        &["parent", "spec", "highAvailability"],
        &["parent", "spec", "highAvailability", "podDisruptionBudget"],
        &[
            "parent",
            "spec",
            "highAvailability",
            "podDisruptionBudget",
            "minAvailable",
        ],
        &["parent", "spec", "highAvailability", "gracefulShutdown"],
        &["parent", "spec", "monitoring"],
        &["parent", "spec", "security"],
        &["parent", "spec", "autoscaling"],
        &["parent", "spec", "service"],
        &["parent", "metadata"],
        &["parent", "metadata", "name"],
        &["parent", "metadata", "annotations"],
        &["parent", "status"],
        &["parent", "status", "conditions"],
        &["children"],
        &["children", "Deployment.apps/v1"],
        &["children", "Deployment.apps/v1", "cache", "status"],
        &[
            "children",
            "Deployment.apps/v1",
            "cache",
            "metadata",
            "annotations",
            LAST_APPLIED,
        ],
        &[
            "children",
            "Service.v1",
            "cache",
            "metadata",
            "annotations",
            LAST_APPLIED,
        ],
        &["related"],
        &["controller", "spec", "childResources"],
        &["finalizing"],
    ];
    let runtime = current_thread();
    let bases: Vec<Value> = ["steady-state", "invalid-spec-keeps-children"]
        .iter()
        .map(|name| {
            let path = format!(
                "{}/tests/fixtures/sync/{name}.json",
                env!("CARGO_MANIFEST_DIR")
            );
            serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("JSON")
        })
        .collect();
    let strategy = (
        any::<Index>(),
        vec((select(SPOTS), arbitrary_json(), any::<bool>()), 1..4),
    );
    check(strategy, |(which, grafts)| {
        let mut request = bases[which.index(bases.len())].clone();
        for (spot, value, as_text) in grafts {
            // A last-applied annotation is a string: graft JSON text there too.
            let value = if as_text {
                json!(value.to_string())
            } else {
                value
            };
            write(&mut request, spot, Some(value));
        }
        decode_and_post(&runtime, serde_json::to_vec(&request).expect("encodes"))
    });
}
