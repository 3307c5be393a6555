//! `docs/crd-reference.md` is generated from the CRD (so from the Rust types): this test fails
//! when it is stale. Regenerate with `UPDATE_EXPECT=1 cargo test --test it golden_files`.

use std::fmt::Write as _;

use serde_json::Value;

/// Subtrees that are Kubernetes types copied verbatim: listed once, not field by field.
const PASSTHROUGH: [(&str, &str); 13] = [
    ("spec.resources", "core/v1 ResourceRequirements"),
    (
        "spec.monitoring.exporterResources",
        "core/v1 ResourceRequirements",
    ),
    (
        "spec.highAvailability.topologySpreadConstraints",
        "list of core/v1 TopologySpreadConstraint",
    ),
    (
        "spec.security.podSecurityContext",
        "core/v1 PodSecurityContext",
    ),
    (
        "spec.security.containerSecurityContext",
        "core/v1 SecurityContext",
    ),
    (
        "spec.security.networkPolicy.allowedSources",
        "list of networking/v1 NetworkPolicyPeer",
    ),
    (
        "spec.autoscaling.metrics",
        "list of autoscaling/v2 MetricSpec",
    ),
    (
        "spec.autoscaling.behavior",
        "autoscaling/v2 HorizontalPodAutoscalerBehavior",
    ),
    ("spec.tolerations", "list of core/v1 Toleration"),
    ("spec.affinity", "core/v1 Affinity"),
    (
        "spec.imagePullSecrets",
        "list of core/v1 LocalObjectReference",
    ),
    ("status.conditions", "list of meta/v1 Condition"),
    ("spec.service.annotations", "map of string to string"),
];

fn type_of(schema: &Value) -> String {
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return "int or string".to_owned();
    }
    match schema["type"].as_str() {
        Some("array") => format!("list of {}", type_of(&schema["items"])),
        Some("object") if schema.get("additionalProperties").is_some() => {
            "map of string to string".to_owned()
        }
        Some(t) => t.to_owned(),
        None => "object".to_owned(),
    }
}

/// `1.0` → `1`: the schema's bounds are numbers, the fields integers.
fn number(value: &Value) -> String {
    match value.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        _ => value.to_string(),
    }
}

fn constraints(schema: &Value) -> String {
    let mut out = Vec::new();
    if let Some(min) = schema.get("minimum") {
        out.push(format!("min {}", number(min)));
    }
    if let Some(max) = schema.get("maximum") {
        out.push(format!("max {}", number(max)));
    }
    if let Some(values) = schema["enum"].as_array() {
        out.push(format!(
            "one of {}",
            values
                .iter()
                .map(|v| format!("`{}`", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(pattern) = schema["pattern"].as_str() {
        out.push(format!("pattern `{pattern}`"));
    }
    if let Some(max) = schema.get("maxLength") {
        out.push(format!("max length {}", number(max)));
    }
    if let Some(max) = schema.get("maxItems") {
        out.push(format!("max {} items", number(max)));
    }
    if let Some(max) = schema["items"].get("maxLength") {
        out.push(format!("each max length {}", number(max)));
    }
    if let Some(max) = schema.get("maxProperties") {
        out.push(format!("max {} entries", number(max)));
    }
    if let Some(max) = schema["additionalProperties"].get("maxLength") {
        out.push(format!("values max length {}", number(max)));
    }
    for rule in schema["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        out.push(format!(
            "rule: {}",
            rule["message"].as_str().unwrap_or_default()
        ));
    }
    out.join("; ")
}

fn walk(path: &str, schema: &Value, out: &mut String) {
    let passthrough = PASSTHROUGH
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, t)| *t);
    if !path.is_empty() {
        let default = schema
            .get("default")
            .map(|d| format!("`{d}`"))
            .unwrap_or_default();
        let description = schema["description"]
            .as_str()
            .unwrap_or_default()
            .replace('\n', " ");
        let kind = passthrough.map_or_else(|| type_of(schema), str::to_owned);
        let _ = writeln!(
            out,
            "| `{path}` | {kind} | {default} | {} | {description} |",
            constraints(schema)
        );
    }
    if passthrough.is_some() {
        return;
    }
    let object = if schema["type"] == "array" {
        &schema["items"]
    } else {
        schema
    };
    if let Some(properties) = object["properties"].as_object() {
        for (name, child) in properties {
            let child_path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            walk(&child_path, child, out);
        }
    }
}

fn reference() -> String {
    let crd: Value = serde_json::to_value(memcached_hook::api::crd()).expect("CRD encodes");
    let schema = &crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"];
    let mut out = String::from(
        "# Memcached CRD reference\n\n\
         Generated from the Rust types by `tests/it/reference.rs` (the same source as `deploy/crd.yaml`);\n\
         a test fails when this page is stale. `memcached.c5c3.io/v1beta1` (stored) and `v1alpha1` have\n\
         identical schemas. Defaults are the CRD's; the hook applies the same defaults itself (see\n\
         [behaviour.md](behaviour.md)). Rules are enforced by the API server (CEL) and re-checked by the hook.\n\
         Examples for each feature: `config/samples/`.\n\n\
         The blocks of settings with a default `{}` (`memcached`, `memcached.hardening`, `monitoring`,\n\
         `security`, `service`) are always stored, their fields' defaults filled in, so `kubectl get\n\
         memcached -o yaml` shows the effective settings. The others stay absent unless written:\n\
         `replicas` (it must stay unset under autoscaling; the hook uses 1 otherwise), `autoscaling` (no\n\
         field of it has a default), `highAvailability` (its mere presence turns on the `soft`\n\
         anti-affinity preset, as in the reference operator), and the blocks whose presence asks for\n\
         something: `podDisruptionBudget`, `gracefulShutdown`, `serviceMonitor`, `sasl`, `tls`,\n\
         `networkPolicy`. Defaulting adds nothing the hook would not have applied itself: the rendered\n\
         children are the same with or without the stored defaults.\n\n\
         | field | type | default | bounds and rules | description |\n|---|---|---|---|---|\n",
    );
    for part in ["spec", "status"] {
        walk(part, &schema["properties"][part], &mut out);
    }
    out
}

/// Stale: `UPDATE_EXPECT=1 cargo test --test it golden_files` rewrites it.
#[test]
fn golden_files_crd_reference_is_up_to_date() {
    expect_test::expect_file!["../../docs/crd-reference.md"].assert_eq(&reference());
}
