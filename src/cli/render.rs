//! `memcached-hook render`: the children of the Memcached objects in a YAML file, from the same
//! `sync` function the server runs, after the checks `kubectl apply` would make (unknown
//! fields, types, `apiVersion` and `kind`). Errors name the file, the document and the field
//! as written in the file.

use std::path::Path;

use anyhow::{Context as _, anyhow, bail};
use k8s_openapi::jiff::Timestamp;
use memcached_hook::SyncError;
use memcached_hook::api::KIND;
use memcached_hook::children::ChildKind;
use serde_json::Value;

use super::fields::{self, UnknownFields, invalid, schema};
use super::input::{INPUT_LIMIT, read_bounded};

/// Every child kind the hook can emit, as a CompositeController would declare them.
fn all_children_controller() -> Value {
    let child_resources: Vec<_> = ChildKind::ALL
        .iter()
        .map(|k| serde_json::json!({"apiVersion": k.api_version(), "resource": k.resource()}))
        .collect();
    serde_json::json!({"spec": {"childResources": child_resources}})
}

/// The children of every Memcached in the YAML file at `path`, as multi-document YAML.
///
/// # Errors
/// An unreadable, oversized or non-YAML file, or a document that is not a valid Memcached.
pub fn render(path: &Path, options: &memcached_hook::Options) -> anyhow::Result<String> {
    let file = path.display();
    let text = String::from_utf8(read_bounded(path, INPUT_LIMIT)?)
        .with_context(|| format!("{file}: not UTF-8 text"))?;
    let documents: Vec<Value> = serde_saphyr::from_str_multiple(&text).map_err(|e| {
        // The parser's advice to its caller is not the user's business.
        let message = e
            .to_string()
            .replace("<input>", &file.to_string())
            .replace(", set DuplicateKeyPolicy in Options if acceptable", "");
        anyhow!("{file}: not YAML: {message}")
    })?;
    let documents: Vec<_> = documents.into_iter().filter(|d| !d.is_null()).collect();
    if documents.is_empty() {
        bail!("{file}: no {KIND} object in the file");
    }
    let schema = schema();
    let mut out = String::new();
    for (index, parent) in documents.into_iter().enumerate() {
        let label = format!("{file}, document {}", index + 1);
        if !parent.is_object() {
            bail!(
                "{label}: not a {KIND} object (a mapping with apiVersion, kind, metadata and spec)"
            );
        }
        let problems: Vec<String> = fields::check(&parent, &schema, UnknownFields::Refuse, "")
            .iter()
            .map(ToString::to_string)
            .collect();
        let name = parent["metadata"]["name"].as_str().map(str::to_owned);
        if !problems.is_empty() {
            bail!("{label}: {}", invalid(name.as_deref(), &problems));
        }
        let children = children(parent, options)
            .map_err(|e| anyhow!("{label}: {}", e.message(name.as_deref())))?;
        out.push_str(&children);
    }
    Ok(out)
}

/// Why one document renders no children.
enum Failure {
    /// The hook could not read it (after the schema found nothing: a bug or a gap in it).
    Decode(String),
    /// The sync function refused it.
    Sync(SyncError),
    /// The answer could not be written.
    Other(anyhow::Error),
}

impl Failure {
    fn message(&self, name: Option<&str>) -> String {
        match self {
            Self::Decode(message) => message.clone(),
            Self::Sync(SyncError::InvalidSpec { violations, .. }) => {
                let problems: Vec<String> = violations.iter().map(ToString::to_string).collect();
                invalid(name, &problems)
            }
            Self::Sync(other) => other.to_string(),
            Self::Other(e) => format!("{e:#}"),
        }
    }
}

/// The children the hook answers for `parent` as a first sync (nothing observed yet).
fn children(mut parent: Value, options: &memcached_hook::Options) -> Result<String, Failure> {
    if let Some(meta) = parent.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.entry("namespace").or_insert_with(|| "default".into());
        meta.entry("generation").or_insert_with(|| 1.into());
    }
    let request = serde_json::json!({
        "controller": all_children_controller(),
        "parent": parent,
        "children": {},
        "related": {},
    });
    let bytes = serde_json::to_vec(&request).map_err(|e| Failure::Other(e.into()))?;
    let request = memcached_hook::hook::decode(&bytes).map_err(|e| {
        // The position is in the request built here, not in the file: leave it out.
        let inner = e.inner().to_string();
        let inner = inner.split(" at line ").next().unwrap_or_default();
        let field = e.path().to_string();
        Failure::Decode(format!("{}: {inner}", field.trim_start_matches("parent.")))
    })?;
    let response = memcached_hook::sync_with(&request, None, Timestamp::UNIX_EPOCH, options)
        .map_err(Failure::Sync)?;
    super::children_yaml(&response.children).map_err(Failure::Other)
}
