//! Reading a values file: its leaves by dotted path, and the numbers and sizes in them.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail};
use serde_json::{Value, json};

/// Maps of labels, annotations or node labels, whose keys may hold dots: kept whole.
const WHOLE: &[&str] = &[
    "commonLabels",
    "commonAnnotations",
    "podLabels",
    "podAnnotations",
    "nodeSelector",
    "affinity",
    "service.annotations",
    "metrics.podAnnotations",
    "metrics.service.annotations",
    "metrics.serviceMonitor.labels",
    "metrics.serviceMonitor.selector",
    "persistence.annotations",
    "persistence.labels",
    "persistence.selector",
    "serviceAccount.annotations",
];

/// Every leaf of `v` under its dotted path; a list, and a map of [`WHOLE`], is one leaf.
pub(super) fn flatten(v: &Value, prefix: &str, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(map) if !map.is_empty() && !WHOLE.contains(&prefix) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(v, &path, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned(), v.clone());
        }
    }
}

/// Sets `v` at `parts` below `root`, making the objects on the way.
pub(super) fn insert_path(root: &mut Value, parts: &[&str], v: Value) {
    let Some((last, init)) = parts.split_last() else {
        return;
    };
    let mut at = root;
    for part in init {
        let Value::Object(map) = at else {
            return;
        };
        at = map.entry((*part).to_owned()).or_insert_with(|| json!({}));
    }
    if let Value::Object(map) = at {
        map.insert((*last).to_owned(), v);
    }
}

pub(super) fn is_default_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

pub(super) fn int(v: &Value, what: &str) -> anyhow::Result<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| anyhow!("{what}: {v} is not a whole number"))
}

pub(super) fn int_or_percent(v: &Value) -> Value {
    v.as_str()
        .and_then(|s| s.parse::<i64>().ok())
        .map_or_else(|| v.clone(), |n| json!(n))
}

/// memcached's `-I` value (bytes, or with `k`/`m`) as `maxItemSize` (`<n>k` or `<n>m`).
pub(super) fn item_size(value: &str) -> anyhow::Result<String> {
    let v = value.trim().to_ascii_lowercase();
    if let Some(n) = v.strip_suffix('k').or_else(|| v.strip_suffix('m'))
        && n.parse::<u64>().is_ok()
    {
        return Ok(v);
    }
    let bytes: u64 = v
        .parse()
        .map_err(|_| anyhow!("max item size {value:?}: not bytes, nor a number with k or m"))?;
    if bytes.is_multiple_of(1024 * 1024) {
        Ok(format!("{}m", bytes / (1024 * 1024)))
    } else if bytes.is_multiple_of(1024) {
        Ok(format!("{}k", bytes / 1024))
    } else {
        bail!("max item size {value}: not a whole number of KiB, which maxItemSize needs")
    }
}
