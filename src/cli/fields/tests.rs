//! The schema check on Memcacheds written by hand: typos, types, identity, the samples.

use super::*;
use serde_json::json;

fn problems(object: &Value, unknown: UnknownFields) -> Vec<String> {
    check(object, &schema(), unknown, "")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn memcached(spec: &Value) -> Value {
    json!({"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
           "metadata": {"name": "c"}, "spec": spec})
}

#[test]
fn a_typo_is_refused_with_the_closest_name_or_ignored() {
    let typo = memcached(&json!({"replica": 3, "memcached": {"maxMemoryMb": 64}}));
    assert_eq!(
        problems(&typo, UnknownFields::Refuse),
        [
            "spec.memcached.maxMemoryMb: unknown field \"maxMemoryMb\"; did you mean \"maxMemoryMB\"?",
            "spec.replica: unknown field \"replica\"; did you mean \"replicas\"?",
        ]
    );
    assert!(problems(&typo, UnknownFields::Ignore).is_empty());
}

#[test]
fn a_field_far_from_any_lists_the_known_ones() {
    let far = memcached(&json!({"highAvailability": {"zzz": true}}));
    let got = problems(&far, UnknownFields::Refuse);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("spec.highAvailability.zzz: unknown field \"zzz\"; known fields: ")
            && got[0].contains("podDisruptionBudget"),
        "{got:?}"
    );
}

#[test]
fn wrong_types_are_named_in_kubernetes_terms() {
    let wrong = memcached(&json!({"replicas": "many", "tolerations": [{"key": 1}]}));
    assert_eq!(
        problems(&wrong, UnknownFields::Ignore),
        [
            "spec.replicas: Invalid value: \"many\": must be of type integer",
            "spec.tolerations[0].key: Invalid value: 1: must be of type string",
        ]
    );
    let big = memcached(&json!({"replicas": 3_000_000_000_u64}));
    assert_eq!(
        problems(&big, UnknownFields::Ignore),
        ["spec.replicas: Invalid value: 3000000000: must be a 32-bit integer (at most 2147483647)"]
    );
}

#[test]
fn another_kind_or_version_is_unsupported() {
    let mut other = memcached(&json!({}));
    other["kind"] = json!("Memcache");
    other["apiVersion"] = json!("apps/v1");
    other["metadata"] = json!({"nmae": "c"});
    assert_eq!(
        problems(&other, UnknownFields::Refuse),
        [
            "apiVersion: Unsupported value: \"apps/v1\": supported values: \"memcached.c5c3.io/v1beta1\", \"memcached.c5c3.io/v1alpha1\"",
            "kind: Unsupported value: \"Memcache\": supported values: \"Memcached\"",
            "metadata.nmae: unknown field \"nmae\"; did you mean \"name\"?",
            "metadata.name: Required value",
        ]
    );
}

#[test]
fn a_valid_sample_has_no_problem() {
    for sample in [
        "ha",
        "production",
        "statefulset",
        "tls",
        "autoscaling",
        "monitoring",
    ] {
        let path = format!(
            "{}/config/samples/{sample}.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("sample");
        let docs: Vec<Value> = serde_saphyr::from_str_multiple(&text).expect("YAML");
        for doc in docs.iter().filter(|d| d["kind"] == KIND) {
            assert_eq!(
                problems(doc, UnknownFields::Refuse),
                Vec::<String>::new(),
                "{path}"
            );
        }
    }
}

#[test]
fn the_schema_bounds_are_refused_as_the_api_server_refuses_them() {
    let spec = json!({
        "replicas": 1,
        "memcached": {"maxMemoryMB": 0, "threads": 0, "maxConnections": 0, "verbosity": 3},
    });
    let found = problems(&memcached(&spec), UnknownFields::Refuse);
    assert_eq!(
        found,
        [
            "spec.memcached.maxConnections: Invalid value: 0: should be greater than or equal to 1",
            "spec.memcached.maxMemoryMB: Invalid value: 0: should be greater than or equal to 16",
            "spec.memcached.threads: Invalid value: 0: should be greater than or equal to 1",
            "spec.memcached.verbosity: Invalid value: 3: should be less than or equal to 2",
        ]
    );
}

#[test]
fn lengths_item_counts_and_required_fields_are_checked() {
    let names: Vec<String> = (0..17).map(|i| format!("zone-{i}")).collect();
    let spec = json!({
        "memcached": {"maxItemSize": "12345678901234567m"},
        "zones": {"names": names},
    });
    let found = problems(&memcached(&spec), UnknownFields::Refuse);
    assert!(
        found.contains(
            &"spec.memcached.maxItemSize: Too long: may not be more than 16 characters".to_owned()
        ),
        "{found:?}"
    );
    assert!(
        found.contains(&"spec.zones.names: Too many: 17: must have at most 16 items".to_owned()),
        "{found:?}"
    );
    let found = problems(
        &memcached(&json!({"zones": {"names": ["a"]}})),
        UnknownFields::Refuse,
    );
    assert_eq!(
        found,
        ["spec.zones.names: Invalid value: 1: should have at least 2 items"]
    );
    let spread = json!({"highAvailability": {"topologySpreadConstraints": [{"maxSkew": 1}]}});
    let found = problems(&memcached(&spread), UnknownFields::Refuse);
    assert_eq!(
        found,
        [
            "spec.highAvailability.topologySpreadConstraints[0].topologyKey: Required value",
            "spec.highAvailability.topologySpreadConstraints[0].whenUnsatisfiable: Required value",
        ]
    );
}

#[test]
fn metadata_is_checked_as_object_meta_whatever_the_schema_declares_of_it() {
    let full = json!({"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
        "metadata": {"name": "c", "namespace": "shop", "labels": {"a": "b"}, "uid": "u"},
        "spec": {}});
    assert!(problems(&full, UnknownFields::Refuse).is_empty());
    let number = json!({"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
        "metadata": {"name": 1}, "spec": {}});
    assert_eq!(
        problems(&number, UnknownFields::Refuse),
        ["metadata.name: Invalid value: 1: must be of type string"]
    );
}
