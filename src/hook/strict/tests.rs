//! Tests of the duplicate-key decoder.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::*;

/// `T` checked, inside path tracking: the way the hook decodes a request.
struct Checked<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::deserialize(deserializer).map(Checked)
    }
}

fn decode<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer)
        .map(|Checked(value)| value)
        .map_err(|e| format!("{}: {}", e.path(), e.inner()))
}

#[derive(Debug, Deserialize)]
struct Outer {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    list: Vec<BTreeMap<String, u8>>,
    #[serde(default, rename = "skipped")]
    _skipped: serde::de::IgnoredAny,
}

#[test]
fn a_repeated_key_is_refused_at_its_object() {
    let err = decode::<Outer>(r#"{"labels": {"app": "a", "tier": "b", "app": "c"}}"#)
        .expect_err("duplicate");
    assert!(err.starts_with("labels: duplicate key \"app\""), "{err}");
    let ok = decode::<Outer>(r#"{"list": [{"a": 1, "b": 2}, {"a": 3}]}"#).expect("unique");
    assert_eq!(ok.list.len(), 2);
    let err = decode::<Outer>(r#"{"list": [{"a": 1}, {"b": 1, "b": 2}]}"#).expect_err("dup");
    assert!(err.starts_with("list[1]: duplicate key \"b\""), "{err}");
    let err = decode::<Outer>(r#"{"labels": {}, "labels": {}}"#).expect_err("field");
    assert!(err.starts_with(".: duplicate key \"labels\""), "{err}");
}

#[test]
fn escaped_spellings_of_one_key_are_the_same_key() {
    let err = decode::<Outer>(r#"{"labels": {"ab": "1", "a\u0062": "2"}}"#).expect_err("dup");
    assert!(err.contains("duplicate key \"ab\""), "{err}");
}

#[test]
fn skipped_content_is_not_checked() {
    let ok = decode::<Outer>(r#"{"skipped": {"a": 1, "a": 2}, "other": {"b": 1, "b": 2}}"#);
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn many_keys_are_checked_without_quadratic_cost() {
    use std::fmt::Write as _;
    let mut text = String::from("{\"labels\": {");
    for i in 0..5000 {
        let _ = write!(text, "\"k{i}\": \"v\",");
    }
    // A repeat of a key kept in place and in the hash set, either side of the boundary.
    for i in [0, 7, 15, 16, 20, 31, 32, 4321] {
        let again = format!("{text}\"k{i}\": \"again\"}}}}");
        let err = decode::<Outer>(&again).expect_err("duplicate");
        assert!(err.contains(&format!("duplicate key \"k{i}\"")), "{err}");
    }
    let unique = format!("{text}\"last\": \"v\"}}}}");
    assert_eq!(decode::<Outer>(&unique).expect("unique").labels.len(), 5001);
}

#[test]
fn a_long_key_is_shortened_in_the_message() {
    let key = "x".repeat(1000);
    let text = format!("{{\"labels\": {{\"{key}\": \"1\", \"{key}\": \"2\"}}}}");
    let err = decode::<Outer>(&text).expect_err("duplicate");
    assert!(err.len() < 200 && err.contains("(1000 bytes)"), "{err}");
}

#[test]
fn values_decode_as_without_the_check() {
    let text = r#"{"a": [1, {"b": null}], "c": {"d": "e"}, "f": 1.5, "g": true}"#;
    let strict: Value = decode(text).expect("decodes");
    assert_eq!(strict, serde_json::from_str::<Value>(text).expect("json"));
    let from_value: Result<BTreeMap<String, Value>, _> = deserialize(strict.clone());
    assert_eq!(
        serde_json::to_value(from_value.expect("decodes")).expect("json"),
        strict
    );
}
