//! A Memcached checked against the CRD's schema before the hook sees it, the way the API server
//! checks what `kubectl apply` sends: types, `apiVersion` and `kind`, the schema's bounds
//! (`minimum`, `maximum`, lengths, item counts, `enum`, `required`) and (for `render`) unknown
//! fields, like server-side strict field validation. The bounds are read from the CRD the hook
//! generates, the same schema the API server enforces, so the two cannot drift. `/sync` does not
//! do this: the API server has already refused or pruned such fields before Metacontroller reads
//! the object. The schema's `pattern`s and CEL rules are the hook's own validation's to check.
//!
//! Problems name the field path as written in the file (`spec.tolerations[0].operator`) and are
//! worded like the API server's field errors.

use std::fmt::{self, Write as _};

use memcached_hook::api::{GROUP, KIND};
use serde_json::{Map, Value};

/// The fields of `metadata` (Kubernetes' `ObjectMeta`).
const OBJECT_META: &[&str] = &[
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
];

/// Longest value a problem repeats; a longer one is cut.
const SHOWN_VALUE_LENGTH: usize = 64;

/// Whether fields the schema does not know are problems.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownFields {
    /// Refused, with the closest known name (`render`, like `kubectl apply`).
    Refuse,
    /// Ignored, as `/sync` ignores them (`replay`).
    Ignore,
}

/// One thing wrong with a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The path as written in the file: `spec.replicas`, `spec.tolerations[0].key`.
    pub path: String,
    /// What is wrong, in the API server's words.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// The parts of a Memcached the hook reads, checked against `schema` (the CRD's
/// `openAPIV3Schema`). `prefix` is put before every path (`parent` for a sync request).
#[must_use]
pub fn check(object: &Value, schema: &Value, unknown: UnknownFields, prefix: &str) -> Vec<Problem> {
    let mut checker = Checker {
        unknown,
        out: Vec::new(),
    };
    let Some(map) = object.as_object() else {
        checker.push(
            prefix,
            format!("Invalid value: {}: must be a {KIND} object", shown(object)),
        );
        return checker.out;
    };
    checker.identity(map, prefix);
    let top = join(prefix, "metadata");
    match map.get("metadata") {
        Some(Value::Object(meta)) => checker.metadata(meta, &top),
        None | Some(Value::Null) => checker.push(&top, "Required value".into()),
        Some(other) => checker.push(&top, type_error(other, "object")),
    }
    let known = ["apiVersion", "kind", "metadata"];
    checker.object(map, schema, prefix, &known);
    checker.out
}

/// The CRD's schema of the stored version (`v1beta1`; `v1alpha1` has the same).
pub fn schema() -> Value {
    let crd = serde_json::to_value(memcached_hook::api::crd()).unwrap_or_default();
    crd["spec"]["versions"]
        .as_array()
        .and_then(|versions| versions.iter().find(|v| v["storage"] == true))
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
        .unwrap_or_default()
}

/// `Memcached "name" is invalid: ...`, the API server's way of listing field errors.
pub fn invalid(name: Option<&str>, problems: &[String]) -> String {
    let mut out = match name {
        Some(name) => format!("{KIND} {name:?} is invalid:"),
        None => format!("{KIND} is invalid:"),
    };
    match problems {
        [one] => {
            let _ = write!(out, " {one}");
        }
        many => many.iter().for_each(|p| {
            let _ = write!(out, "\n* {p}");
        }),
    }
    out
}

/// Why the parent of a sync request that the hook refused is wrong, in the terms of the CRD
/// (types, `apiVersion`, `kind`); `None` when the schema finds nothing, or there is no parent.
/// Unknown fields are ignored, as `/sync` ignores them.
pub fn parent_problems(body: &[u8]) -> Option<String> {
    let request: Value = serde_json::from_slice(body).ok()?;
    let parent = request.get("parent")?;
    let problems: Vec<String> = check(parent, &schema(), UnknownFields::Ignore, "parent")
        .iter()
        .map(ToString::to_string)
        .collect();
    let name = parent["metadata"]["name"].as_str();
    (!problems.is_empty()).then(|| invalid(name, &problems))
}

struct Checker {
    unknown: UnknownFields,
    out: Vec<Problem>,
}

impl Checker {
    fn push(&mut self, path: &str, message: String) {
        self.out.push(Problem {
            path: path.to_owned(),
            message,
        });
    }

    /// `apiVersion` and `kind` name a Memcached of a served version.
    fn identity(&mut self, map: &Map<String, Value>, prefix: &str) {
        let versions = [format!("{GROUP}/v1beta1"), format!("{GROUP}/v1alpha1")];
        let expected: [(&str, Vec<&str>); 2] = [
            ("apiVersion", versions.iter().map(String::as_str).collect()),
            ("kind", vec![KIND]),
        ];
        for (field, supported) in expected {
            let path = join(prefix, field);
            match map.get(field) {
                None | Some(Value::Null) => self.push(&path, "Required value".into()),
                Some(Value::String(s)) if supported.contains(&s.as_str()) => {}
                Some(other) => {
                    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
                    self.push(
                        &path,
                        format!(
                            "Unsupported value: {}: supported values: {}",
                            shown(other),
                            list.join(", ")
                        ),
                    );
                }
            }
        }
    }

    fn metadata(&mut self, meta: &Map<String, Value>, path: &str) {
        self.unknown_fields(meta, path, OBJECT_META);
        let name = join(path, "name");
        match meta.get("name") {
            None | Some(Value::Null) => self.push(&name, "Required value".into()),
            Some(v) if !v.is_string() => self.push(&name, type_error(v, "string")),
            Some(_) => {}
        }
        if let Some(v) = meta
            .get("namespace")
            .filter(|v| !v.is_string() && !v.is_null())
        {
            self.push(&join(path, "namespace"), type_error(v, "string"));
        }
        for field in ["labels", "annotations"] {
            let path = join(path, field);
            match meta.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::Object(map)) => {
                    for (key, value) in map.iter().filter(|(_, v)| !v.is_string()) {
                        self.push(&join(&path, key), type_error(value, "string"));
                    }
                }
                Some(other) => self.push(&path, type_error(other, "object")),
            }
        }
    }

    /// Fields of `map` that are not in `known`, with the closest known name.
    fn unknown_fields(&mut self, map: &Map<String, Value>, path: &str, known: &[&str]) {
        if self.unknown == UnknownFields::Ignore {
            return;
        }
        for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
            let message = match closest(key, known) {
                Some(near) => format!("unknown field {key:?}; did you mean {near:?}?"),
                None => format!("unknown field {key:?}; known fields: {}", known.join(", ")),
            };
            self.push(&join(path, key), message);
        }
    }

    /// `value` against the structural schema `schema`.
    fn value(&mut self, value: &Value, schema: &Value, path: &str) {
        if value.is_null() {
            // The API server drops a null before it validates (the CRD has no nullable field).
            return;
        }
        if schema["x-kubernetes-int-or-string"] == true {
            if !(value.is_string() || value.is_i64() || value.is_u64()) {
                self.push(path, type_error(value, "integer or string"));
            }
            return;
        }
        let Some(expected) = schema["type"].as_str() else {
            return;
        };
        if !has_type(value, expected) {
            self.push(path, type_error(value, expected));
            return;
        }
        match value {
            Value::Object(map) => self.object(map, schema, path, &[]),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.value(item, &schema["items"], &format!("{path}[{i}]"));
                }
            }
            Value::Number(n)
                if schema["format"] == "int32"
                    && n.as_i64().and_then(|i| i32::try_from(i).ok()).is_none() =>
            {
                let message =
                    format!("Invalid value: {n}: must be a 32-bit integer (at most 2147483647)");
                self.push(path, message);
                return;
            }
            _ => {}
        }
        self.bounds(value, schema, path);
    }

    /// The schema's bounds on a value of the right type, worded as the API server words them.
    fn bounds(&mut self, value: &Value, schema: &Value, path: &str) {
        let count = |key: &str| schema[key].as_u64().and_then(|n| usize::try_from(n).ok());
        let (len, most, least) = match value {
            Value::Number(n) => return self.number_bounds(n, schema, path),
            Value::String(s) => return self.string_bounds(s, value, schema, path),
            Value::Array(items) => (items.len(), count("maxItems"), count("minItems")),
            Value::Object(map) => (map.len(), count("maxProperties"), count("minProperties")),
            _ => return,
        };
        if let Some(max) = most.filter(|max| len > *max) {
            self.push(
                path,
                format!("Too many: {len}: must have at most {max} items"),
            );
        }
        if let Some(min) = least.filter(|min| len < *min) {
            let message = format!("Invalid value: {len}: should have at least {min} items");
            self.push(path, message);
        }
    }

    /// `minimum` and `maximum` (`exclusiveMinimum`, `exclusiveMaximum`).
    fn number_bounds(&mut self, n: &serde_json::Number, schema: &Value, path: &str) {
        let Some(v) = n.as_f64() else { return };
        for (key, exclusive, beyond, than) in [
            (
                "minimum",
                "exclusiveMinimum",
                std::cmp::Ordering::Less,
                "greater than",
            ),
            (
                "maximum",
                "exclusiveMaximum",
                std::cmp::Ordering::Greater,
                "less than",
            ),
        ] {
            let Some(bound) = schema[key].as_f64() else {
                continue;
            };
            let exclusive = schema[exclusive] == true;
            let order = v.partial_cmp(&bound);
            if order == Some(beyond) || (exclusive && order == Some(std::cmp::Ordering::Equal)) {
                let or_equal = if exclusive { "" } else { " or equal to" };
                let message = format!(
                    "Invalid value: {n}: should be {than}{or_equal} {}",
                    number(bound)
                );
                self.push(path, message);
            }
        }
    }

    /// `maxLength`, `minLength` (in characters, as the API server counts) and `enum`.
    fn string_bounds(&mut self, s: &str, value: &Value, schema: &Value, path: &str) {
        let count = |key: &str| schema[key].as_u64().and_then(|n| usize::try_from(n).ok());
        let chars = s.chars().count();
        if let Some(max) = count("maxLength").filter(|max| chars > *max) {
            self.push(
                path,
                format!("Too long: may not be more than {max} characters"),
            );
        }
        if let Some(min) = count("minLength").filter(|min| chars < *min) {
            let message = format!(
                "Invalid value: {}: should be at least {min} characters long",
                shown(value)
            );
            self.push(path, message);
        }
        if let Some(allowed) = schema["enum"].as_array()
            && !allowed.contains(value)
        {
            let list: Vec<String> = allowed.iter().map(ToString::to_string).collect();
            let message = format!(
                "Unsupported value: {}: supported values: {}",
                shown(value),
                list.join(", ")
            );
            self.push(path, message);
        }
    }

    /// The fields of an object: those of `properties`, or any under `additionalProperties`.
    /// `also`: fields the caller checks itself (`apiVersion`, `kind`, `metadata`), known and
    /// not walked here.
    fn object(&mut self, map: &Map<String, Value>, schema: &Value, path: &str, also: &[&str]) {
        if schema["x-kubernetes-preserve-unknown-fields"] == true {
            return;
        }
        let properties = schema["properties"].as_object();
        // A required field the schema defaults is filled in before the API server validates.
        for field in schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let defaulted = properties
                .and_then(|p| p.get(field))
                .is_some_and(|f| !f["default"].is_null());
            if !defaulted && map.get(field).is_none_or(Value::is_null) {
                self.push(&join(path, field), "Required value".into());
            }
        }
        let additional = &schema["additionalProperties"];
        let mut known: Vec<&str> = also.to_vec();
        known.extend(
            properties
                .into_iter()
                .flat_map(|p| p.keys().map(String::as_str)),
        );
        for (key, value) in map.iter().filter(|(k, _)| !also.contains(&k.as_str())) {
            let field = join(path, key);
            if let Some(inner) = properties.and_then(|p| p.get(key)) {
                self.value(value, inner, &field);
            } else if additional.is_object() {
                self.value(value, additional, &field);
            }
        }
        if additional.is_null() || *additional == false {
            self.unknown_fields(map, path, &known);
        }
    }
}

/// A schema bound as written: `16`, not `16.0`.
fn number(bound: f64) -> String {
    if bound.fract() == 0.0 && bound.abs() < 1e15 {
        format!("{bound:.0}")
    } else {
        bound.to_string()
    }
}

fn join(prefix: &str, field: &str) -> String {
    if prefix.is_empty() {
        field.to_owned()
    } else {
        format!("{prefix}.{field}")
    }
}

fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    }
}

/// `Invalid value: "many": must be of type integer`.
fn type_error(value: &Value, expected: &str) -> String {
    format!(
        "Invalid value: {}: must be of type {expected}",
        shown(value)
    )
}

/// A value as a problem repeats it: scalars as written (cut when long), collections by type.
fn shown(value: &Value) -> String {
    match value {
        Value::Object(_) => "\"object\"".to_owned(),
        Value::Array(_) => "\"array\"".to_owned(),
        Value::String(s) if s.chars().count() > SHOWN_VALUE_LENGTH => {
            let cut: String = s.chars().take(SHOWN_VALUE_LENGTH).collect();
            format!("\"{cut}...\"")
        }
        other => other.to_string(),
    }
}

/// The known name closest to `key`, if one is close enough to be a typo of it.
fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let key = key.to_lowercase();
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(&key, &k.to_lowercase()), *k))
        .filter(|(distance, k)| *distance <= (k.len() / 3).max(1))
        .min()
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests;
