//! `memcached-hook from-bitnami`: a Memcached (and its SASL Secret) from the values file of the
//! retired Bitnami memcached chart, with what has no counterpart named instead of dropped.
//!
//! Only what the file sets is read: a value left out keeps the chart's default, which the
//! Memcached's own default replaces (docs/install.md, "Moving from the Bitnami chart", lists
//! the differences). Values equal to the chart's defaults are not reported.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, anyhow, bail};
use serde_json::{Map, Value, json};

use super::input::{INPUT_LIMIT, read_bounded};

mod chart;
mod conversion;
mod left_out;
mod values;

use chart::is_default;
use conversion::Conversion;
use values::flatten;

/// What the conversion produced: the objects, and the values left out with the reason.
#[derive(Debug, Default)]
pub struct Converted {
    /// The Memcached, then a Secret when the file holds a SASL password.
    pub objects: Vec<Value>,
    /// `(value path, why)` of each value set in the file that the Memcached does not carry.
    pub left_out: Vec<(String, String)>,
}

/// The values of `values` (a parsed values file) as a Memcached named `name`.
///
/// # Errors
/// A value the Memcached would carry but cannot read (e.g. `replicaCount: many`).
pub fn convert(values: &Value, name: &str, namespace: Option<&str>) -> anyhow::Result<Converted> {
    let mut leaves = BTreeMap::new();
    flatten(values, "", &mut leaves);
    let mut c = Conversion {
        leaves,
        spec: Map::new(),
        extra: Vec::new(),
    };
    c.workload()?;
    c.memcached()?;
    c.pod();
    c.availability()?;
    c.monitoring();
    let sasl = c.auth(name);
    let Conversion {
        leaves, mut spec, ..
    } = c;
    if let Some(secret) = &sasl {
        spec.insert(
            "security".into(),
            json!({"sasl": {"enabled": true,
                            "credentialsSecretRef": {"name": secret["metadata"]["name"]}}}),
        );
    }
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    let memcached = json!({
        "apiVersion": "memcached.c5c3.io/v1beta1",
        "kind": "Memcached",
        "metadata": metadata,
        "spec": spec,
    });
    let mut objects = vec![memcached];
    if let Some(mut secret) = sasl {
        if let Some(ns) = namespace {
            secret["metadata"]["namespace"] = json!(ns);
        }
        objects.push(secret);
    }
    let left_out = leaves
        .into_iter()
        .filter(|(path, v)| !is_default(path, v))
        .map(|(path, _)| {
            let why = left_out::reason(&path);
            (path, why.to_owned())
        })
        .collect();
    Ok(Converted { objects, left_out })
}

/// The values file at `path` as YAML: the objects, with what was left out as comments on top.
///
/// # Errors
/// An unreadable file, not YAML or not a mapping, or a value that cannot be read.
pub fn from_bitnami(
    path: &Path,
    name: Option<&str>,
    namespace: Option<&str>,
) -> anyhow::Result<String> {
    let file = path.display().to_string();
    let bytes = read_bounded(path, INPUT_LIMIT)?;
    let text = String::from_utf8(bytes).with_context(|| format!("{file}: not UTF-8 text"))?;
    let values: Value =
        serde_saphyr::from_str(&text).map_err(|e| anyhow!("{file}: not YAML: {e}"))?;
    let values = if values.is_null() { json!({}) } else { values };
    if !values.is_object() {
        bail!("{file}: not a values file (a mapping of the chart's values)");
    }
    let mut values = values;
    let named = ["fullnameOverride", "nameOverride"]
        .iter()
        .find_map(|key| text_value(&values, key));
    // The release's name becomes the Memcached's (its objects are named after it).
    if let Some(map) = values.as_object_mut() {
        map.remove("fullnameOverride");
        map.remove("nameOverride");
    }
    let name = name
        .map(str::to_owned)
        .or(named)
        .unwrap_or_else(|| "memcached".to_owned());
    let converted = convert(&values, &name, namespace).map_err(|e| anyhow!("{file}: {e}"))?;
    let mut out = String::new();
    if converted.left_out.is_empty() {
        out.push_str(
            "# Every value set in the file carries over (values equal to the chart's defaults \
             are not read).\n",
        );
    } else {
        out.push_str("# Not carried over from the values file:\n");
        for (path, why) in &converted.left_out {
            let _ = writeln!(out, "#   {path}: {why}");
        }
    }
    for object in &converted.objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object).context("encoding as YAML")?);
    }
    Ok(out)
}

fn text_value(values: &Value, key: &str) -> Option<String> {
    values[key]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}
