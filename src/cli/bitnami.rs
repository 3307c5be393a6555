//! `memcached-hook from-bitnami`: a Memcached (and its SASL Secret) from the values file of a
//! release of the retired Bitnami memcached chart, with what has no counterpart named instead of
//! dropped.
//!
//! A value left out keeps the chart's default for the release's chart generation, which the
//! Memcached's own default replaces (docs/install.md, "Moving from the Bitnami chart", lists the
//! differences). Values equal to that generation's defaults are not read nor reported.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use serde_json::{Value, json};

use super::input::{INPUT_LIMIT, read_bounded};

mod chart;
mod conversion;
mod left_out;
mod metadata;
mod release;
mod sasl;
mod values;

use chart::Generation;
use conversion::Conversion;
use release::Release;
use values::flatten;

/// `from-bitnami`'s arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The chart's values file (what `helm get values RELEASE` prints).
    pub values: PathBuf,
    /// The Helm release's name (the NAME column of `helm list`): its objects' names and labels,
    /// which the Memcached's must not take.
    #[arg(long)]
    pub release: String,
    /// The release's chart version (the CHART column of `helm list`, e.g. `memcached-7.4.1`):
    /// the defaults differ between the chart's generations 6, 7 and 8.
    #[arg(long)]
    pub chart_version: String,
    /// The Memcached's name (default: the release's object name with `-cache` appended, so the
    /// two run side by side).
    #[arg(long)]
    pub name: Option<String>,
    /// Its namespace (default: none, so `kubectl apply -n` decides).
    #[arg(long)]
    pub namespace: Option<String>,
}

/// What the conversion produced: the objects, the values left out with the reason, and what
/// the user must do besides applying the objects.
#[derive(Debug, Default)]
pub struct Converted {
    /// The Memcached, then a Secret when the file holds a SASL password.
    pub objects: Vec<Value>,
    /// `(value path, why)` of each value set in the file that the Memcached does not carry.
    pub left_out: Vec<(String, String)>,
    /// Warnings and steps, each a paragraph, printed before the objects.
    pub notices: Vec<String>,
}

/// The values of `values` (a parsed values file of `release`) as a Memcached named `name`.
///
/// # Errors
/// A value the Memcached would carry but cannot read (e.g. `replicaCount: many`).
pub fn convert(
    values: &Value,
    release: &Release,
    name: &str,
    namespace: Option<&str>,
) -> anyhow::Result<Converted> {
    let mut leaves = BTreeMap::new();
    flatten(values, "", &mut leaves);
    let mut c = Conversion::new(leaves, release.generation);
    c.workload()?;
    let auth = c.auth(release, name, namespace)?;
    c.memcached(auth.is_some())?;
    c.pod()?;
    c.common_metadata();
    c.availability()?;
    c.persistence();
    c.monitoring();
    let Conversion {
        leaves,
        spec,
        notes,
        notices,
        generation,
        ..
    } = c;
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    let mut objects = vec![json!({
        "apiVersion": "memcached.c5c3.io/v1beta1",
        "kind": "Memcached",
        "metadata": metadata,
        "spec": spec,
    })];
    if let Some(mut secret) = auth.and_then(|a| a.secret) {
        if let Some(ns) = namespace {
            secret["metadata"]["namespace"] = json!(ns);
        }
        objects.push(secret);
    }
    let mut left_out: Vec<(String, String)> = leaves
        .into_iter()
        .filter(|(path, v)| !generation.is_default(path, v))
        .map(|(path, _)| {
            let why = left_out::reason(&path).to_owned();
            (path, why)
        })
        .collect();
    left_out.extend(notes);
    left_out.sort();
    Ok(Converted {
        objects,
        left_out,
        notices,
    })
}

/// The values file of `args` as YAML: the objects, with the warnings, the steps and what was
/// left out as comments on top.
///
/// # Errors
/// An unreadable file, not YAML or not a mapping, a value that cannot be read, or a name that
/// would collide with the release's objects.
pub fn from_bitnami(args: &Args) -> anyhow::Result<String> {
    let path: &Path = &args.values;
    let file = path.display().to_string();
    let bytes = read_bounded(path, INPUT_LIMIT)?;
    let text = String::from_utf8(bytes).with_context(|| format!("{file}: not UTF-8 text"))?;
    let values: Value =
        serde_saphyr::from_str(&text).map_err(|e| anyhow!("{file}: not YAML: {e}"))?;
    let mut values = if values.is_null() { json!({}) } else { values };
    if !values.is_object() {
        bail!("{file}: not a values file (a mapping of the chart's values)");
    }
    let generation = Generation::parse(&args.chart_version)?;
    let release = Release::of(&values, &args.release, generation);
    // Read into the release's names above; nothing of the Memcached's.
    if let Some(map) = values.as_object_mut() {
        map.remove("fullnameOverride");
        map.remove("nameOverride");
    }
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-cache", release.fullname));
    release.check_apart(&name)?;
    let converted = convert(&values, &release, &name, args.namespace.as_deref())
        .map_err(|e| anyhow!("{file}: {e}"))?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# The Memcached {name} runs beside the release {} (whose objects are named {}): its \
         objects, Service and pod labels are its own. Move clients to the headless Service \
         {name} (one address per pod), then uninstall the release.",
        release.name, release.fullname
    );
    for notice in &converted.notices {
        out.push_str("#\n");
        for line in notice.lines() {
            let _ = writeln!(out, "# {line}");
        }
    }
    out.push_str("#\n");
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
