use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::from_str;
use crate::hook::{CustomizeRequest, SyncRequest};

/// What serde_json makes of `text`, as `Debug` text (the request types have no `PartialEq`).
fn serde<T: DeserializeOwned + std::fmt::Debug>(text: &str) -> Option<String> {
    serde_json::from_str::<T>(text)
        .ok()
        .map(|v| format!("{v:?}"))
}

fn fast<T: DeserializeOwned + std::fmt::Debug>(text: &str) -> Option<String> {
    from_str::<T>(text).map(|v| format!("{v:?}"))
}

/// The fast path decodes `text` and gets serde_json's value.
fn same<T: DeserializeOwned + std::fmt::Debug>(text: &str) {
    let expected = serde::<T>(text);
    assert!(expected.is_some(), "serde_json refuses {text:?}");
    assert_eq!(fast::<T>(text), expected, "for {text:?}");
}

/// The fast path leaves `text` to serde_json.
fn left<T: DeserializeOwned + std::fmt::Debug>(text: &str) {
    assert_eq!(fast::<T>(text), None, "decoded {text:?}");
}

#[test]
fn every_sync_fixture_decodes_as_serde_json_decodes_it() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sync");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).expect("fixtures") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a fixture");
        match serde::<SyncRequest>(&text) {
            // The fixtures are what the API server sends: all of them take the fast path.
            Some(expected) => assert_eq!(fast::<SyncRequest>(&text), Some(expected), "{path:?}"),
            None => assert_eq!(fast::<SyncRequest>(&text), None, "{path:?}"),
        }
        let compact = serde_json::to_string(&serde_json::from_str::<Value>(&text).expect("JSON"))
            .expect("encodes");
        assert_eq!(
            fast::<SyncRequest>(&compact),
            serde::<SyncRequest>(&compact)
        );
        count += 1;
    }
    assert!(count > 20, "only {count} fixtures");
}

#[test]
fn a_customize_request_decodes_as_serde_json_decodes_it() {
    same::<CustomizeRequest>(
        r#"{"controller": {"metadata": {"name": "memcached"}}, "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached", "metadata": {"name": "cache", "namespace": "ns"}, "spec": {"security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": "creds"}}}}}}"#,
    );
}

#[test]
fn values_of_every_kind_decode_as_serde_json_decodes_them() {
    for text in [
        "null",
        " true ",
        "false",
        "0",
        "-1",
        "18446744073709551615",
        "-9223372036854775808",
        r#""""#,
        r#""plain""#,
        r#""tab\tquote\"slash\/back\\ \b\f\n\r""#,
        r#""\u00e9\u0041 \u2028 \u0000""#,
        "\"caf\u{e9} \u{1f600}\"",
        "[]",
        "[1, [2, [3]], {}]",
        r#"{"a": {"b": [null, true, "x"]}, "c": -5}"#,
        "\n\t{ \"k\" : \"v\" }\r\n",
    ] {
        same::<Value>(text);
    }
}

#[test]
fn skipped_values_are_validated_as_serde_json_validates_them() {
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Read {
        kept: i32,
    }
    for skipped in [
        "1.5",
        "-0.0e+10",
        "1E5",
        "123456789012345678901234567890",
        r#""\ud800 lone surrogates are only checked when read""#,
        r#"{"deep": [[[[{"a": [1e-3, -0, 0.25]}]]]]}"#,
        "\"a long string that is scanned eight bytes at a time, with \\\"escapes\\\" in it\"",
    ] {
        same::<Read>(&format!(r#"{{"skipped": {skipped}, "kept": 1}}"#));
    }
    for malformed in [
        "01",
        "1.",
        "1e",
        "-",
        ".5",
        "+1",
        "tru",
        "nul",
        r#""\x""#,
        r#""\u12G4""#,
        "\"control \u{1} character\"",
        "\"unterminated",
        "[1,]",
        "[,1]",
        r#"{"a":1,}"#,
        r#"{"a" 1}"#,
        "{1: 2}",
        "[1 2]",
    ] {
        let text = format!(r#"{{"skipped": {malformed}, "kept": 1}}"#);
        assert!(serde::<Read>(&text).is_none(), "serde_json takes {text:?}");
        left::<Read>(&text);
    }
}

#[test]
fn what_it_does_not_decode_as_serde_json_does_is_left_to_serde_json() {
    // Floats, -0 and integers beyond 64 bits are numbers the hook does not read exactly as
    // serde_json does without reimplementing its float parsing.
    for text in [
        "1.5",
        "-0",
        "1e3",
        "18446744073709551616",
        "-9223372036854775809",
    ] {
        left::<Value>(text);
        assert!(serde::<Value>(text).is_some());
    }
    // A surrogate escape where the string is read, an enum written as an object, trailing data,
    // nesting past the limit, an empty body, a duplicate key the types refuse.
    left::<String>(r#""\ud83d\ude00""#);
    left::<Value>("[1] 2");
    left::<Value>("");
    let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
    left::<Value>(&deep);
    assert!(serde::<Value>(&deep).is_some());
    same::<Value>(&format!("{}{}", "[".repeat(100), "]".repeat(100)));
}

#[test]
fn a_raw_value_is_the_text_of_the_value_as_serde_json_gives_it() {
    for text in [
        r#"  "a \"quoted\" string"  "#,
        r#"{"a": [1, 2.5, null]}"#,
        "-12",
    ] {
        let expected = serde_json::from_str::<Box<RawValue>>(text).expect("raw");
        let fast = from_str::<Box<RawValue>>(text).expect("fast raw");
        assert_eq!(fast.get(), expected.get());
    }
}

#[test]
fn the_sixty_four_bit_scan_finds_the_first_special_byte_at_every_offset() {
    for special in [b'"', b'\\', 0x00, 0x1f] {
        for at in 0..20 {
            let mut bytes = vec![b'x'; 24];
            // Bytes that a word-at-a-time check could mistake: just above each special byte.
            bytes[at..].iter_mut().step_by(3).for_each(|b| *b = 0x20);
            bytes[at] = special;
            if at + 1 < bytes.len() {
                bytes[at + 1] = special;
            }
            assert_eq!(
                super::reader::string_end(&bytes, 0),
                at,
                "{special:#x} at {at}"
            );
        }
    }
    assert_eq!(super::reader::string_end(b"no special byte", 0), 15);
    assert_eq!(super::reader::string_end("é€😀\"".as_bytes(), 0), 9);
}
