//! `docs/crd-reference.md` is generated from the CRD (so from the Rust types): this test fails
//! when it is stale. Regenerate with `UPDATE_EXPECT=1 cargo test --test it golden_files`.

use std::fmt::Write as _;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

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

/// The schema of a list's items (`items` as one schema).
fn items(schema: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match schema.items.as_ref()? {
        JSONSchemaPropsOrArray::Schema(items) => Some(items),
        JSONSchemaPropsOrArray::Schemas(_) => None,
    }
}

/// The schema of a map's values (`additionalProperties` as a schema).
fn values(schema: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match schema.additional_properties.as_ref()? {
        JSONSchemaPropsOrBool::Schema(values) => Some(values),
        JSONSchemaPropsOrBool::Bool(_) => None,
    }
}

fn type_of(schema: &JSONSchemaProps) -> String {
    if schema.x_kubernetes_int_or_string == Some(true) {
        return "int or string".to_owned();
    }
    match schema.type_.as_deref() {
        Some("array") => format!(
            "list of {}",
            items(schema).map_or_else(|| "object".to_owned(), type_of)
        ),
        Some("object") if schema.additional_properties.is_some() => {
            "map of string to string".to_owned()
        }
        Some(t) => t.to_owned(),
        None => "object".to_owned(),
    }
}

/// `1.0` → `1`: the schema's bounds are numbers, the fields integers.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        value.to_string()
    }
}

fn constraints(schema: &JSONSchemaProps) -> String {
    let mut out = Vec::new();
    if let Some(min) = schema.minimum {
        out.push(format!("min {}", number(min)));
    }
    if let Some(max) = schema.maximum {
        out.push(format!("max {}", number(max)));
    }
    if let Some(values) = &schema.enum_ {
        out.push(format!(
            "one of {}",
            values
                .iter()
                .map(|v| format!("`{}`", v.0.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(pattern) = &schema.pattern {
        out.push(format!("pattern `{pattern}`"));
    }
    if let Some(max) = schema.max_length {
        out.push(format!("max length {max}"));
    }
    if let Some(max) = schema.max_items {
        out.push(format!("max {max} items"));
    }
    if let Some(max) = items(schema).and_then(|i| i.max_length) {
        out.push(format!("each max length {max}"));
    }
    if let Some(max) = schema.max_properties {
        out.push(format!("max {max} entries"));
    }
    if let Some(max) = values(schema).and_then(|v| v.max_length) {
        out.push(format!("values max length {max}"));
    }
    for rule in schema.x_kubernetes_validations.iter().flatten() {
        out.push(format!(
            "rule: {}",
            rule.message.as_deref().unwrap_or_default()
        ));
    }
    out.join("; ")
}

fn walk(path: &str, schema: &JSONSchemaProps, out: &mut String) {
    let passthrough = PASSTHROUGH
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, t)| *t);
    if !path.is_empty() {
        let default = schema
            .default
            .as_ref()
            .map(|d| format!("`{}`", d.0))
            .unwrap_or_default();
        let description = schema
            .description
            .as_deref()
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
    let object = if schema.type_.as_deref() == Some("array") {
        items(schema)
    } else {
        Some(schema)
    };
    for (name, child) in object
        .and_then(|o| o.properties.as_ref())
        .into_iter()
        .flatten()
    {
        let child_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        walk(&child_path, child, out);
    }
}

/// The `openAPIV3Schema` of the stored version of the CRD, typed.
pub(crate) fn stored_schema() -> JSONSchemaProps {
    let crd = memcached_hook::api::crd();
    let stored = crd.spec.versions.into_iter().find(|v| v.storage);
    stored
        .and_then(|v| v.schema?.open_api_v3_schema)
        .expect("the stored version has a schema")
}

fn reference() -> String {
    let schema = stored_schema();
    let properties = schema.properties.expect("properties");
    let mut out = String::from(
        "# Memcached CRD reference\n\n\
         Generated from the Rust types by `tests/it/reference.rs` (the same source as `deploy/crd/crd.yaml`);\n\
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
        walk(part, &properties[part], &mut out);
    }
    out
}

/// Stale: `UPDATE_EXPECT=1 cargo test --test it golden_files` rewrites it.
#[test]
fn golden_files_crd_reference_is_up_to_date() {
    expect_test::expect_file!["../../docs/crd-reference.md"].assert_eq(&reference());
}

/// docs/testing.md, "Where a new test goes": every file of tests/it/ has its row.
#[test]
fn every_test_file_is_listed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/testing.md")).expect("docs/testing.md");
    let table = doc
        .split("### Where a new test goes")
        .nth(1)
        .and_then(|rest| rest.split("\n#").next())
        .expect("docs/testing.md has the section \"Where a new test goes\"");
    let mut missing: Vec<String> = std::fs::read_dir(root.join("tests/it"))
        .expect("tests/it")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".rs"))
        .filter(|name| !table.contains(&format!("| `{name}` |")))
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "tests/it files without a row in docs/testing.md: {missing:?}"
    );
}
