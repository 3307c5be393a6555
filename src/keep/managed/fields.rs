//! A server-side-apply field set (`FieldsV1`) laid over the live object: the fields it names,
//! with the object's values, written as JSON.
//!
//! Linear in the size of the object and the set: each level of both is read once
//! ([`Node`]), and the items of a list are matched against the set's `k:`/`v:`/`i:` keys
//! through an index built once per list (a key is parsed once, not once per item). What is
//! read is bounded: at most [`MAX_DEPTH`] nested levels, at most [`MAX_KEY_SHAPES`] different
//! merge-key shapes in one list; beyond either the child is not kept (the caller then refuses
//! the request, which changes nothing).

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

use serde_json::Value;
use serde_json::value::RawValue;

use super::node::Node;

/// Deepest nesting of a field set followed; Kubernetes objects nest about ten levels.
pub const MAX_DEPTH: usize = 32;
/// Most different sets of merge-key fields in one list's keys (Kubernetes lists have one).
pub const MAX_KEY_SHAPES: usize = 4;

/// Members added to an object besides those of its field set (they win over the set's).
pub type Extra<'a> = (&'a str, Member<'a>);

/// How one member of a written object is written.
pub enum Member<'a> {
    /// The value as it is.
    Raw(&'a RawValue),
    /// The value reduced to a field set.
    Projected(&'a RawValue, &'a RawValue),
    /// An object reduced to a field set (if any), with members of its own added.
    Object(&'a RawValue, Option<&'a RawValue>, Vec<Extra<'a>>),
}

/// Writes `member` to `out`; `None` when the value is out of bounds or not JSON this reads.
pub fn write(out: &mut String, member: &Member<'_>, depth: usize) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    match member {
        Member::Raw(value) => {
            out.push_str(value.get());
            Some(())
        }
        Member::Projected(value, set) => project(out, value, set, depth),
        Member::Object(value, set, extras) => {
            let object = Node::object(value)?;
            let set = match set {
                Some(set) => Node::object(set)?,
                None => HashMap::new(),
            };
            write_object(out, &object, &set, extras, depth)
        }
    }
}

/// `value` reduced to the field set `set`. An empty set (or one holding only `.`) owns the
/// value as a whole, and so does a scalar where the set expects structure.
fn project(out: &mut String, value: &RawValue, set: &RawValue, depth: usize) -> Option<()> {
    let set = match Node::parse(set)? {
        Node::Object(set) if set.keys().any(|k| k != ".") => set,
        _ => return write(out, &Member::Raw(value), depth),
    };
    match Node::parse(value)? {
        Node::Object(object) => write_object(out, &object, &set, &[], depth),
        Node::Array(items) => {
            let index = ListIndex::new(&set)?;
            out.push('[');
            let mut first = true;
            for (i, item) in items.into_iter().enumerate() {
                let Some(sub) = index.find(i, item) else {
                    continue;
                };
                if !std::mem::take(&mut first) {
                    out.push(',');
                }
                project(out, item, sub, depth + 1)?;
            }
            out.push(']');
            Some(())
        }
        Node::Scalar => write(out, &Member::Raw(value), depth),
    }
}

/// The members of `object` named by `set` (`f:<name>` entries), and `extras`, in name order.
fn write_object<'a>(
    out: &mut String,
    object: &HashMap<Cow<'a, str>, &'a RawValue>,
    set: &HashMap<Cow<'a, str>, &'a RawValue>,
    extras: &[Extra<'a>],
    depth: usize,
) -> Option<()> {
    let mut members: Vec<(&str, Member<'a>)> = set
        .iter()
        .filter_map(|(key, sub)| {
            let name = key.strip_prefix("f:")?;
            let value = object.get(name)?;
            Some((name, Member::Projected(value, sub)))
        })
        .filter(|(name, _)| extras.iter().all(|(extra, _)| extra != name))
        .collect();
    members.extend(extras.iter().map(|(name, member)| (*name, member.clone())));
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (name, member)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(name).ok()?);
        out.push(':');
        write(out, member, depth + 1)?;
    }
    out.push('}');
    Some(())
}

impl Clone for Member<'_> {
    fn clone(&self) -> Self {
        match self {
            Self::Raw(v) => Self::Raw(v),
            Self::Projected(v, s) => Self::Projected(v, s),
            Self::Object(v, s, e) => Self::Object(v, *s, e.clone()),
        }
    }
}

/// The keys of a list's field set, indexed: `k:{...}` by the canonical JSON of their merge-key
/// values (grouped by the names of those fields), `v:<json>` by the canonical JSON of the value,
/// `i:<n>` by position. When two keys name the same item, the first in byte order wins.
struct ListIndex<'a> {
    /// Per merge-key shape: its field names (sorted), and the keys by their values.
    keyed: Vec<(Vec<String>, HashMap<String, Indexed<'a>>)>,
    valued: HashMap<String, Indexed<'a>>,
    positional: HashMap<usize, Indexed<'a>>,
}

/// A key of a list's field set and its sub-set.
type Indexed<'a> = (&'a str, &'a RawValue);

impl<'a> ListIndex<'a> {
    /// `None` when the keys have more than [`MAX_KEY_SHAPES`] shapes.
    fn new(set: &'a HashMap<Cow<'a, str>, &'a RawValue>) -> Option<Self> {
        let mut index = Self {
            keyed: Vec::new(),
            valued: HashMap::new(),
            positional: HashMap::new(),
        };
        for (key, sub) in set {
            let entry = (key.as_ref(), *sub);
            if let Some(k) = key.strip_prefix("k:") {
                let Ok(fields) = serde_json::from_str::<serde_json::Map<String, Value>>(k) else {
                    continue;
                };
                let names: Vec<String> = fields.keys().cloned().collect();
                let values: Vec<&Value> = fields.values().collect();
                let Ok(canonical) = serde_json::to_string(&values) else {
                    continue;
                };
                let group = match index.keyed.iter().position(|(n, _)| *n == names) {
                    Some(group) => group,
                    None if index.keyed.len() < MAX_KEY_SHAPES => {
                        index.keyed.push((names, HashMap::new()));
                        index.keyed.len() - 1
                    }
                    None => return None,
                };
                insert_first(&mut index.keyed[group].1, canonical, entry);
            } else if let Some(v) = key.strip_prefix("v:") {
                if let Ok(canonical) = canonical(v) {
                    insert_first(&mut index.valued, canonical, entry);
                }
            } else if let Some(Ok(i)) = key.strip_prefix("i:").map(str::parse::<usize>) {
                insert_first(&mut index.positional, i, entry);
            }
        }
        Some(index)
    }

    /// The sub-set of the item at `position`, if a key names it (an item that repeats a member
    /// name matches no `k:` key).
    fn find(&self, position: usize, item: &'a RawValue) -> Option<&'a RawValue> {
        let mut found: Option<Indexed<'a>> = None;
        let mut consider = |candidate: Option<&Indexed<'a>>| {
            if let Some(&(key, sub)) = candidate
                && found.is_none_or(|(best, _)| key < best)
            {
                found = Some((key, sub));
            }
        };
        if !self.keyed.is_empty()
            && let Some(Node::Object(fields)) = Node::parse(item)
        {
            for (names, keys) in &self.keyed {
                if let Some(canonical) = merge_key(&fields, names) {
                    consider(keys.get(&canonical));
                }
            }
        }
        if !self.valued.is_empty() {
            consider(canonical(item.get()).ok().and_then(|c| self.valued.get(&c)));
        }
        consider(self.positional.get(&position));
        found.map(|(_, sub)| sub)
    }
}

/// Indexes `entry` under `key` unless a key first in byte order is there already.
fn insert_first<'a, K: std::hash::Hash + Eq>(
    map: &mut HashMap<K, Indexed<'a>>,
    key: K,
    entry: Indexed<'a>,
) {
    match map.entry(key) {
        Entry::Occupied(mut there) => {
            if entry.0 < there.get().0 {
                there.insert(entry);
            }
        }
        Entry::Vacant(slot) => {
            slot.insert(entry);
        }
    }
}

/// The canonical JSON of the values of `names` in `fields` (as a `k:` key's are written), or
/// `None` when one is missing.
fn merge_key(fields: &HashMap<Cow<'_, str>, &RawValue>, names: &[String]) -> Option<String> {
    let values = names
        .iter()
        .map(|name| serde_json::from_str::<Value>(fields.get(name.as_str())?.get()).ok())
        .collect::<Option<Vec<Value>>>()?;
    serde_json::to_string(&values).ok()
}

/// JSON text in one canonical form (objects with sorted keys, no whitespace).
fn canonical(text: &str) -> serde_json::Result<String> {
    serde_json::to_string(&serde_json::from_str::<Value>(text)?)
}
