//! `memcached-hook render`: the children of the Memcached objects in a YAML file (or standard
//! input, `-`), from the same `sync` function the server runs, after the checks `kubectl apply`
//! would make (unknown fields, types, the schema's bounds, `apiVersion` and `kind`). Like
//! `kubectl`, it reads every document of the file and the items of a `kind: List`; objects of
//! other kinds (a Namespace, a Secret beside the Memcached) are passed over. Errors name the
//! file, the document and the field as written in the file.

use std::borrow::Cow;
use std::path::Path;

use anyhow::{Context as _, anyhow, bail};
use k8s_openapi::jiff::Timestamp;
use memcached_hook::SyncError;
use memcached_hook::api::KIND;
use memcached_hook::children::ChildKind;
use memcached_hook::hook::{
    ChildResource, Controller, ControllerSpec, Received, SyncHooks, SyncRequest,
};
use serde_json::Value;
use serde_saphyr::{DefaultMessageFormatter, MessageFormatter, RenderOptions};

use super::fields::{self, UnknownFields, invalid, schema};
use super::input::{INPUT_LIMIT, read_bounded, read_stdin_bounded};

/// Every child kind the hook can emit, as a CompositeController would declare them.
fn all_children_controller() -> Controller {
    let child_resources = ChildKind::ALL
        .iter()
        .map(|k| ChildResource {
            api_version: k.api_version().to_owned(),
            resource: k.resource().to_owned(),
        })
        .collect();
    Controller {
        spec: ControllerSpec {
            child_resources,
            hooks: SyncHooks::default(),
        },
    }
}

/// The YAML parser's messages, but for a repeated key: the file's author is told the key, not
/// how a program could accept it.
struct YamlMessages;

impl MessageFormatter for YamlMessages {
    fn format_message<'a>(&self, err: &'a serde_saphyr::Error) -> Cow<'a, str> {
        match err {
            serde_saphyr::Error::DuplicateMappingKey { key: Some(key), .. } => {
                Cow::Owned(format!("duplicate mapping key: {key}"))
            }
            serde_saphyr::Error::DuplicateMappingKey { key: None, .. } => {
                Cow::Borrowed("duplicate mapping key")
            }
            other => DefaultMessageFormatter.format_message(other),
        }
    }
}

/// The documents of the YAML `text` read from `file`, or why it is not YAML.
fn documents(file: &str, text: &str) -> anyhow::Result<Vec<Value>> {
    let documents: Vec<Value> = serde_saphyr::from_str_multiple(text).map_err(|e| {
        let mut render = RenderOptions::new(&YamlMessages);
        render.source_name = Some(file);
        let message = e.render_with_options(render);
        anyhow!("{file}: not YAML: {message}")
    })?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// Whether a document is meant as a Memcached: its kind says so, or its `apiVersion` is of the
/// Memcached's group (a wrong kind there is a typo to report, not another object to pass over).
/// Anything that is not a mapping is reported too.
fn meant_as_memcached(document: &Value) -> bool {
    let Some(map) = document.as_object() else {
        return true;
    };
    let group = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.split_once('/'))
        .map(|(group, _)| group);
    map.get("kind").and_then(Value::as_str) == Some(KIND)
        || group == Some(memcached_hook::api::GROUP)
        || !map.contains_key("kind")
}

/// The documents to render, each with its label for errors: every document, the items of a
/// `kind: List` in its place, those of other kinds left out.
fn parents(file: &str, documents: Vec<Value>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (index, document) in documents.into_iter().enumerate() {
        let label = format!("{file}, document {}", index + 1);
        if document["kind"] == "List"
            && document["apiVersion"] == "v1"
            && let Value::Array(items) = document["items"].clone()
        {
            out.extend(
                items
                    .into_iter()
                    .enumerate()
                    .filter(|(_, item)| meant_as_memcached(item))
                    .map(|(i, item)| (format!("{label}, items[{i}]"), item)),
            );
        } else if meant_as_memcached(&document) {
            out.push((label, document));
        }
    }
    out
}

/// The children of every Memcached in the YAML file at `path` (`-`: standard input), as
/// multi-document YAML.
///
/// # Errors
/// An unreadable, oversized or non-YAML file, one without a Memcached, or a document that is not
/// a valid Memcached.
pub fn render(path: &Path, options: &memcached_hook::Options) -> anyhow::Result<String> {
    let stdin = path == Path::new("-");
    let file = if stdin {
        "standard input".to_owned()
    } else {
        path.display().to_string()
    };
    let bytes = if stdin {
        read_stdin_bounded(INPUT_LIMIT)?
    } else {
        read_bounded(path, INPUT_LIMIT)?
    };
    let text = String::from_utf8(bytes).with_context(|| format!("{file}: not UTF-8 text"))?;
    let parents = parents(&file, documents(&file, &text)?);
    if parents.is_empty() {
        bail!("{file}: no {KIND} object in the file");
    }
    let schema = schema();
    let mut out = String::new();
    for (label, parent) in parents {
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

/// The children the hook answers for `parent` as a first sync (nothing observed yet), in the
/// namespace `default` at generation 1 unless the document names others.
fn children(mut parent: Value, options: &memcached_hook::Options) -> Result<String, Failure> {
    if let Some(meta) = parent.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.entry("namespace").or_insert_with(|| "default".into());
        meta.entry("generation").or_insert_with(|| 1.into());
    }
    let parent = memcached_hook::hook::decode_parent(&parent).map_err(|e| {
        Failure::Decode(match e.path().to_string().as_str() {
            "." => e.inner().to_string(),
            field => format!("{field}: {}", e.inner()),
        })
    })?;
    let request = SyncRequest {
        controller: all_children_controller(),
        parent,
        children: memcached_hook::hook::Observed::default(),
        related: memcached_hook::hook::Observed::default(),
        finalizing: false,
    };
    let received = Received::built(request);
    let response =
        memcached_hook::sync(&received, Timestamp::UNIX_EPOCH, options).map_err(Failure::Sync)?;
    super::children_yaml(&response.children).map_err(Failure::Other)
}
