//! The bad-input catalogue, `tests/fixtures/bad-input/catalogue.yaml`: each case is a request
//! built from data (its format is described at the top of that file) and the status, field and
//! message `/sync` must answer it with. This module builds the bodies; `tests/it/http.rs` sends
//! them through the router.

use serde::Deserialize;
use serde_json::{Map, Value};

/// One case of the catalogue.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// What is wrong with the request.
    pub name: String,
    request: Recipe,
    /// The HTTP status of the answer.
    pub status: u16,
    /// The JSON path the error must name, if checked.
    #[serde(default)]
    pub field: Option<String>,
    /// A part of the error message.
    #[serde(default)]
    pub message: String,
}

/// How a case's body is built (see the catalogue's header).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Recipe {
    raw: Option<String>,
    raw_bytes: Option<Vec<u8>>,
    base: Option<String>,
    #[serde(default)]
    first_sync: bool,
    #[serde(default)]
    set: Map<String, Value>,
    #[serde(default)]
    remove: Vec<String>,
    duplicate: Option<Duplicate>,
    #[serde(default)]
    truncate: bool,
    append: Option<String>,
    repeat: Option<Repeat>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Duplicate {
    at: String,
    key: String,
    first: Value,
    second: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Repeat {
    text: String,
    times: usize,
}

/// Every case of the catalogue.
pub fn cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/bad-input/catalogue.yaml"
    );
    let text = std::fs::read_to_string(path).expect("the catalogue");
    serde_saphyr::from_str(&text).expect("the catalogue is well-formed")
}

impl Case {
    /// The request body.
    pub fn body(&self) -> Vec<u8> {
        let r = &self.request;
        let mut body = if let Some(raw) = &r.raw {
            raw.clone().into_bytes()
        } else if let Some(bytes) = &r.raw_bytes {
            bytes.clone()
        } else {
            edited(r)
        };
        if r.truncate {
            body.truncate(body.len() / 2);
        }
        if let Some(text) = &r.append {
            body.extend_from_slice(text.as_bytes());
        }
        if let Some(Repeat { text, times }) = &r.repeat {
            body.extend_from_slice(text.repeat(*times).as_bytes());
        }
        body
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/sync/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(path).expect("fixture")
}

/// The base fixture with the recipe's edits; its bytes as they are when there is no edit.
fn edited(r: &Recipe) -> Vec<u8> {
    let bytes = fixture(r.base.as_deref().unwrap_or("steady-state"));
    let edits = r.first_sync || !r.set.is_empty() || !r.remove.is_empty() || r.duplicate.is_some();
    if r.base.is_none() && !edits {
        return bytes;
    }
    let base: Value = serde_json::from_slice(&bytes).expect("fixture JSON");
    let mut request = base.clone();
    if r.first_sync {
        request["children"] = Value::Object(Map::new());
    }
    for (pointer, value) in &r.set {
        let (object, key) = parent_of(&mut request, pointer);
        object.insert(key, generate(value, &base));
    }
    for pointer in &r.remove {
        let (object, key) = parent_of(&mut request, pointer);
        object.remove(&key).expect("a key to remove");
    }
    match &r.duplicate {
        Some(d) => duplicated(&request, d, &base),
        None => serde_json::to_vec(&request).expect("JSON"),
    }
}

/// The object holding `pointer`'s last key, and that key.
fn parent_of<'v>(request: &'v mut Value, pointer: &str) -> (&'v mut Map<String, Value>, String) {
    let (parent, last) = pointer.rsplit_once('/').expect("a JSON pointer");
    let key = last.replace("~1", "/").replace("~0", "~");
    let object = request
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {parent}"));
    (object, key)
}

/// The request as JSON text with `d.key` twice in the object at `d.at`.
fn duplicated(request: &Value, d: &Duplicate, base: &Value) -> Vec<u8> {
    const MARK: &str = "duplicated-key-goes-here";
    let mut r = request.clone();
    r.pointer_mut(&d.at)
        .and_then(Value::as_object_mut)
        .expect("an object to duplicate a key in")
        .insert(MARK.to_owned(), Value::Null);
    let text = serde_json::to_string(&r).expect("JSON");
    let key = Value::String(d.key.clone());
    let (first, second) = (generate(&d.first, base), generate(&d.second, base));
    let pair = format!("{key}:{first},{key}:{second}");
    let out = text.replacen(&format!("\"{MARK}\":null"), &pair, 1);
    assert_ne!(out, text, "marker replaced");
    out.into_bytes()
}

/// `value` with its generators (`$repeat`, `$list`, `$map`, `$entry`, `$nested`, `$from`)
/// expanded.
fn generate(value: &Value, base: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|v| generate(v, base)).collect()),
        Value::Object(map) if map.len() == 1 && map.keys().all(|k| k.starts_with('$')) => {
            let (name, args) = map.iter().next().expect("one entry");
            generator(name, args, base)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), generate(v, base)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn generator(name: &str, args: &Value, base: &Value) -> Value {
    let arg = |i: usize| generate(&args[i], base);
    let text = |i: usize| arg(i).as_str().expect("a string argument").to_owned();
    let count = |i: usize| usize::try_from(args[i].as_u64().expect("a count")).expect("usize");
    match name {
        "$repeat" => Value::String(text(0).repeat(count(1))),
        "$list" => (0..count(1))
            .map(|i| Value::String(text(0).replace("{i}", &i.to_string())))
            .collect(),
        "$map" => Value::Object(
            (0..count(2))
                .map(|i| (text(0).replace("{i}", &i.to_string()), arg(1)))
                .collect(),
        ),
        "$entry" => Value::Object(Map::from_iter([(text(0), arg(1))])),
        "$nested" => {
            let depth = usize::try_from(args.as_u64().expect("a depth")).expect("usize");
            (1..depth).fold(Value::Array(Vec::new()), |inner, _| {
                Value::Array(vec![inner])
            })
        }
        "$from" => base
            .pointer(args.as_str().expect("a JSON pointer"))
            .expect("a value at the pointer")
            .clone(),
        other => panic!("unknown generator {other}"),
    }
}
