//! The API server's own rules for what the hook writes, mirrored: the syntax of names, label
//! keys and values and annotation keys (apimachinery's `IsDNS1123Label`, `IsDNS1123Subdomain`,
//! `IsDNS1035Label`, `IsQualifiedName`, `IsValidLabelValue`), the total size of an object's
//! annotations, and the size of what Metacontroller stores of each child.
//!
//! The spec checks (`api::validation`) and the check of every desired child
//! (`children::accept`) both use these, so a rule lives in one place.

use std::io;

use serde::Serialize;

/// The longest name of a StatefulSet this hook writes: the StatefulSet controller labels each
/// pod `controller-revision-hash=<name>-<hash>`, a hash of up to 10 characters, and a label
/// value has at most 63.
pub const STATEFULSET_NAME_LENGTH: usize = 52;

/// The longest DNS-1123 or DNS-1035 label.
pub const DNS_LABEL_LENGTH: usize = 63;
/// The longest DNS-1123 subdomain.
pub const DNS_SUBDOMAIN_LENGTH: usize = 253;
/// The longest label value, and the longest name part of a qualified name.
pub const LABEL_VALUE_LENGTH: usize = 63;
/// All keys and values of one object's annotations together, in bytes (apimachinery's
/// `TotalAnnotationSizeLimitB`).
pub const ANNOTATIONS_TOTAL: usize = 256 * 1024;
/// The label Metacontroller's generated selector owns: it adds it to every child's metadata,
/// and a child whose `controller-uid` differs from the parent's UID fails the whole sync.
pub const CONTROLLER_UID: &str = "controller-uid";
/// The annotation in which Metacontroller's dynamic apply stores the child as the hook desired
/// it.
pub const LAST_APPLIED: &str = "metacontroller.k8s.io/last-applied-configuration";

/// A DNS-1123 label: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
#[must_use]
pub fn is_dns_label(text: &str) -> bool {
    let b = text.as_bytes();
    !b.is_empty()
        && b.len() <= DNS_LABEL_LENGTH
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// A DNS-1035 label (a Service name): a DNS-1123 label that starts with a letter.
#[must_use]
pub fn is_dns1035_label(text: &str) -> bool {
    is_dns_label(text) && text.as_bytes()[0].is_ascii_lowercase()
}

/// A DNS-1123 subdomain: dot-separated DNS-1123 labels, at most 253 characters.
#[must_use]
pub fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= DNS_SUBDOMAIN_LENGTH && text.split('.').all(is_dns_label)
}

/// A qualified name, the syntax of label and annotation keys: an optional DNS subdomain prefix
/// and `/`, then a name of at most 63 of `[A-Za-z0-9._-]` that starts and ends with an
/// alphanumeric character.
#[must_use]
pub fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(is_dns_subdomain) && !name.is_empty() && is_label_value(name)
}

/// A label value: empty, or at most 63 of `[A-Za-z0-9._-]` starting and ending with an
/// alphanumeric character.
#[must_use]
pub fn is_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() <= LABEL_VALUE_LENGTH
        && bytes.first().is_none_or(u8::is_ascii_alphanumeric)
        && bytes.last().is_none_or(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// What is wrong with an image reference the API server or the container runtime refuses:
/// leading or trailing whitespace (the API server's rule, which also refuses one of only
/// whitespace) or a control character (no registry name holds one). `None` for an empty image,
/// which the callers report as missing.
#[must_use]
pub fn image_error(image: &str) -> Option<&'static str> {
    if image.trim() != image {
        Some("must not have leading or trailing whitespace")
    } else if image.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else {
        None
    }
}

/// The bytes of `(key, value)` pairs as the API server counts them against
/// [`ANNOTATIONS_TOTAL`].
pub fn annotations_size<'a>(entries: impl IntoIterator<Item = (&'a String, &'a String)>) -> usize {
    entries.into_iter().map(|(k, v)| k.len() + v.len()).sum()
}

/// The length of `value` encoded as Metacontroller (Go's `encoding/json`) encodes it:
/// serde_json's compact encoding plus Go's longer escapes (`<`, `>` and `&` as `\u003c`, 6 bytes
/// for 1; U+2028 and U+2029 as `\u2028`, 6 bytes for 3; `\b` and `\f` counted as `\u0008`).
/// Counted as serde_json writes it, nothing kept; a value serde_json could not encode counts as 0.
#[must_use]
pub fn go_json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut count = GoCount(0);
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}

/// A writer that only counts what serde_json writes into it, with what Go writes longer.
struct GoCount(usize);

impl io::Write for GoCount {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // serde_json writes a string's unescaped runs whole (a character is never split between
        // two writes) and each escape in a write of its own: a write of exactly `\b` or `\f` is
        // that escape, never text, since a backslash of the text is written as `\\`.
        let extra = match buf {
            b"\\b" | b"\\f" => 4,
            _ => buf
                .iter()
                .enumerate()
                .map(|(i, &b)| match b {
                    b'<' | b'>' | b'&' => 5,
                    0xE2 if matches!(buf.get(i + 1..i + 3), Some([0x80, 0xA8 | 0xA9])) => 3,
                    _ => 0,
                })
                .sum(),
        };
        self.0 += buf.len() + extra;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        for ok in [
            "team",
            "example.com/team",
            "a",
            "A.b-c_d",
            "sidecar.istio.io/inject",
        ] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        let long = "n".repeat(64);
        for bad in [
            "",
            "/team",
            "example.com/",
            "team/checkout/eu",
            "Example.com/team",
            "-team",
            "team-",
            "a b",
            "bad key!",
            &long,
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
    }

    #[test]
    fn subdomains_and_labels() {
        assert!(is_dns_subdomain("cache-critical") && is_dns_subdomain("a.b-c.d"));
        let long = "a".repeat(64);
        for bad in [
            "",
            "Cache",
            "cache critical",
            "a..b",
            "-a",
            "a.",
            "My_Secret",
            &long,
        ] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
        assert!(is_dns1035_label("cache") && !is_dns1035_label("1cache"));
        assert!(is_dns_label("1cache") && !is_dns_label("a.b"));
    }

    #[test]
    fn images() {
        assert_eq!(image_error("memcached:1.6"), None);
        assert_eq!(image_error(""), None);
        for bad in [" ", " memcached", "memcached ", "\tmemcached"] {
            assert_eq!(
                image_error(bad),
                Some("must not have leading or trailing whitespace"),
                "{bad:?}"
            );
        }
        for bad in ["mem\u{0}cached", "mem\ncached", "mem\u{7f}cached"] {
            assert_eq!(
                image_error(bad),
                Some("must not contain control characters")
            );
        }
    }

    /// The length by encoding with serde_json and adding Go's longer escapes found in the text.
    fn reference<T: Serialize>(value: &T) -> usize {
        let text = serde_json::to_string(value).expect("encodes");
        let angles = text.matches(['<', '>', '&']).count();
        let separators = text.matches(['\u{2028}', '\u{2029}']).count();
        text.len() + 5 * angles + 3 * separators
    }

    #[test]
    fn the_count_is_serde_jsons_encoding_with_gos_escapes() {
        use std::collections::BTreeMap;
        let values = serde_json::json!({
            "n": [0, -1, 9, 10, -99, 100, i64::MIN, u64::MAX, 1.5, -0.25, true, false, null],
            "s": ["", "a", "\"\\/", "\n\r\t\u{1}\u{1f}\u{7f}", "é\u{2028}<&>\u{20ac}"],
            "o": {"": {}, "k": [], "nested": [{"a": [[]]}]}
        });
        assert_eq!(go_json_len(&values), reference(&values));
        let map = BTreeMap::from([(1_u8, "x"), (20, "<")]);
        assert_eq!(go_json_len(&map), reference(&map));
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sync");
        let mut children = 0;
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let body = std::fs::read(entry.expect("entry").path()).expect("read");
            let Ok(received) = crate::hook::Received::decode(body) else {
                continue;
            };
            let now = k8s_openapi::jiff::Timestamp::UNIX_EPOCH;
            let Ok(answer) = crate::sync::sync(&received, now, &crate::Options::default()) else {
                continue;
            };
            for child in &answer.children {
                if !matches!(child, crate::hook::Child::Kept(_)) {
                    assert_eq!(go_json_len(child), reference(child));
                    children += 1;
                }
            }
            assert_eq!(go_json_len(&answer.status), reference(&answer.status));
        }
        assert!(children > 100, "{children}");
    }

    #[test]
    fn go_escapes_are_counted() {
        assert_eq!(go_json_len("a"), 3);
        assert_eq!(go_json_len("<a>&"), 2 + 1 + 3 * 6);
        assert_eq!(go_json_len("\u{2028}x\u{2029}"), 2 + 6 + 1 + 6);
        assert_eq!(go_json_len("\u{2027}\u{20ac}"), 2 + 3 + 3);
        assert_eq!(go_json_len("\"\\\n"), 2 + 6);
        assert_eq!(go_json_len("\u{8}\u{1}"), 2 + 12);
        let long = "<".repeat(100_000);
        assert_eq!(go_json_len(&long), 2 + 600_000);
    }
}
