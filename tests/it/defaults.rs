//! The CRD's defaults, as the API server applies them (structural defaulting: a missing field
//! with a `default` gets it, then the defaults inside it, top-down), change nothing the hook
//! answers: the children and the status of a spec are the same whether the stored object carries
//! the defaults or not. So a block default can never turn an optional child on.

use serde_json::{Value, json};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray,
};

use crate::common::render;
use crate::reference::stored_schema;

/// `value` with the defaults of `schema` filled in, as the API server does on create and read.
fn defaulted(schema: &JSONSchemaProps, value: &mut Value) {
    if let (Some(properties), Some(object)) = (&schema.properties, value.as_object_mut()) {
        for (name, property) in properties {
            if let (false, Some(default)) = (object.contains_key(name), &property.default) {
                object.insert(name.clone(), default.0.clone());
            }
            if let Some(field) = object.get_mut(name) {
                defaulted(property, field);
            }
        }
    }
    if let (Some(JSONSchemaPropsOrArray::Schema(items)), Some(list)) =
        (&schema.items, value.as_array_mut())
    {
        list.iter_mut().for_each(|item| defaulted(items, item));
    }
}

fn spec_schema() -> JSONSchemaProps {
    let mut properties = stored_schema().properties.expect("properties");
    properties.remove("spec").expect("a spec schema")
}

/// Specs covering each block, present and absent, and every sample.
fn specs() -> Vec<(String, Value)> {
    let sasl = json!({"enabled": true, "credentialsSecretRef": {"name": "s"}});
    let tls = json!({"enabled": true, "certificateSecretRef": {"name": "t"}});
    let mut out = vec![
        ("empty".to_owned(), json!({})),
        ("replicas".to_owned(), json!({"replicas": 3})),
        (
            "autoscaling".to_owned(),
            json!({"resources": {"requests": {"cpu": "100m"}},
                   "autoscaling": {"enabled": true, "maxReplicas": 4}}),
        ),
        (
            "memory limit at the default maxMemoryMB".to_owned(),
            json!({"resources": {"limits": {"memory": "96Mi"}}}),
        ),
        (
            "zero means default".to_owned(),
            json!({"memcached": {"maxMemoryMB": 0, "hardening": {}}}),
        ),
        (
            "monitoring".to_owned(),
            json!({"monitoring": {"enabled": true, "serviceMonitor": {}}}),
        ),
        (
            "monitoring off".to_owned(),
            json!({"monitoring": {"enabled": false}}),
        ),
        (
            "ha".to_owned(),
            json!({"highAvailability": {"podDisruptionBudget": {"enabled": true},
                   "gracefulShutdown": {"enabled": true}}}),
        ),
        (
            "security".to_owned(),
            json!({"security": {"sasl": sasl, "tls": tls, "networkPolicy": {"enabled": true}}}),
        ),
        (
            "rolling restart".to_owned(),
            json!({"security": {"secretRotation": "RollingRestart", "tls": tls}}),
        ),
        (
            "service".to_owned(),
            json!({"service": {"publishNotReadyAddresses": true}}),
        ),
    ];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/config/samples");
    for entry in std::fs::read_dir(dir).expect("config/samples") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("sample");
        let object: Value = serde_saphyr::from_str(&text).expect("YAML");
        out.push((path.display().to_string(), object["spec"].clone()));
    }
    out
}

#[test]
fn the_stored_defaults_change_nothing_the_hook_answers() {
    let schema = spec_schema();
    for (name, spec) in specs() {
        let mut stored = spec.clone();
        defaulted(&schema, &mut stored);
        let (plain, with_defaults) = (render(spec), render(stored));
        assert_eq!(plain["children"], with_defaults["children"], "{name}");
        assert_eq!(plain["status"], with_defaults["status"], "{name}");
    }
}

#[test]
fn an_empty_spec_is_stored_with_its_settings_blocks_and_nothing_that_turns_a_child_on() {
    let mut stored = json!({});
    defaulted(&spec_schema(), &mut stored);
    assert_eq!(
        stored,
        json!({
            "workload": "Deployment",
            "memcached": {"maxMemoryMB": 64, "maxConnections": 1024, "threads": 4, "maxItemSize": "1m",
                          "verbosity": 0,
                          "hardening": {"disableFlushAll": false, "disableDumping": true,
                                        "disableWatch": true}},
            "monitoring": {},
            "security": {"defaultUser": "Memcached", "secretRotation": "Reload"},
            "service": {"publishNotReadyAddresses": false}
        })
    );
}
