//! Labels and selectors shared by every child: the recommended `app.kubernetes.io` labels.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::api::apiserver::is_label_value;

/// `app.kubernetes.io/name`.
pub const NAME: &str = "app.kubernetes.io/name";
/// `app.kubernetes.io/instance`.
pub const INSTANCE: &str = "app.kubernetes.io/instance";
/// `app.kubernetes.io/managed-by`.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// `app.kubernetes.io/version`.
pub const VERSION: &str = "app.kubernetes.io/version";
/// Value of `app.kubernetes.io/name`.
pub const APP_NAME: &str = "memcached";
/// Value of `app.kubernetes.io/managed-by`.
pub const MANAGER: &str = "memcached-operator";

/// The three base labels; also every selector (never changes with the spec).
#[must_use]
pub fn base(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME.to_owned(), APP_NAME.to_owned()),
        (INSTANCE.to_owned(), name.to_owned()),
        (MANAGED_BY.to_owned(), MANAGER.to_owned()),
    ])
}

/// [`selector`] as a label selector string, `key=value` pairs joined by commas in key order
/// (the scale subresource's `status.selector`).
#[must_use]
pub fn selector_string(name: &str) -> String {
    base(name)
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `metadata` of a child other than the workload: its name and the base labels.
#[must_use]
pub fn metadata(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some(base(name)),
        ..ObjectMeta::default()
    }
}

/// A label selector on the base labels (the workload, PDB, NetworkPolicy, ServiceMonitor).
#[must_use]
pub fn selector(name: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(base(name)),
        match_expressions: None,
    }
}

/// Base labels plus the version label when the image has a usable tag (the workload and its
/// pods).
#[must_use]
pub fn with_version(name: &str, image: &str) -> BTreeMap<String, String> {
    let mut labels = base(name);
    if let Some(tag) = version(image) {
        labels.insert(VERSION.to_owned(), tag.to_owned());
    }
    labels
}

/// The two labels the anti-affinity terms select on (no managed-by, as the reference operator's
/// terms).
#[must_use]
pub fn anti_affinity(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME.to_owned(), APP_NAME.to_owned()),
        (INSTANCE.to_owned(), name.to_owned()),
    ])
}

/// The image tag when it is a valid label value: no digest, text after the last `:` that is
/// not part of a registry host (`host:5000/img` has no tag), at most 63 characters of label
/// syntax.
#[must_use]
pub fn version(image: &str) -> Option<&str> {
    if image.contains('@') {
        return None;
    }
    let (_, tag) = image.rsplit_once(':')?;
    (!tag.is_empty() && is_label_value(tag)).then_some(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_label_rule() {
        let cases = [
            ("memcached:1.6", Some("1.6")),
            ("memcached:1.6.29", Some("1.6.29")),
            ("memcached:1.6-alpine", Some("1.6-alpine")),
            ("registry.io/img:v2", Some("v2")),
            ("memcached", None),
            ("memcached@sha256:abcdef", None),
            ("memcached:1.6@sha256:abcdef", None),
            ("registry:5000/memcached", None),
            ("registry:5000/memcached:1.6", Some("1.6")),
            ("memcached:", None),
        ];
        for (image, want) in cases {
            assert_eq!(version(image), want, "{image}");
        }
        let long = format!("memcached:{}", "a".repeat(64));
        assert_eq!(version(&long), None);
        let max = format!("memcached:{}", "a".repeat(63));
        assert_eq!(version(&max).map(str::len), Some(63));
        assert_eq!(version("memcached:-bad"), None);
    }

    #[test]
    fn base_labels_are_the_recommended_three() {
        let labels = base("cache");
        assert_eq!(labels.len(), 3);
        assert_eq!(labels[NAME], "memcached");
        assert_eq!(labels[INSTANCE], "cache");
        assert_eq!(labels[MANAGED_BY], "memcached-operator");
        assert!(!with_version("cache", "memcached").contains_key(VERSION));
        assert_eq!(with_version("cache", "memcached:1.6")[VERSION], "1.6");
        assert_eq!(anti_affinity("cache").len(), 2);
    }
}
