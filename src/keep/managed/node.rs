//! One level of a JSON value, read lazily: an object's members or an array's items are kept as
//! slices of the request body ([`RawValue`]) and parsed only when the keep path descends into
//! them. Reading a level scans its bytes once; nothing below is stored.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// An object's members by name (a repeated name is refused), an array's items, or a scalar.
pub enum Node<'a> {
    /// Members, unescaped names borrowed from the body where they have no escapes.
    Object(HashMap<Cow<'a, str>, &'a RawValue>),
    /// Items in order.
    Array(Vec<&'a RawValue>),
    /// A string, number, boolean or `null`.
    Scalar,
}

impl<'a> Node<'a> {
    /// The level `raw` starts; `None` for an object with a repeated name.
    pub fn parse(raw: &'a RawValue) -> Option<Self> {
        serde_json::from_str(raw.get()).ok()
    }

    /// The level `raw` starts, when it is an object.
    pub fn object(raw: &'a RawValue) -> Option<HashMap<Cow<'a, str>, &'a RawValue>> {
        match Self::parse(raw)? {
            Self::Object(members) => Some(members),
            _ => None,
        }
    }
}

/// The string `raw` holds, unescaped; `None` when it is not a string.
pub fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Key<'_>>(raw.get()).ok().map(|k| k.0)
}

/// A member name, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Node<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let mut members = HashMap::with_capacity(map.size_hint().unwrap_or(0).min(64));
        while let Some(Key(name)) = map.next_key()? {
            let value: &RawValue = map.next_value()?;
            match members.entry(name) {
                Entry::Occupied(_) => return Err(A::Error::custom("repeated member")),
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
            }
        }
        Ok(Node::Object(members))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_bool<E: Error>(self, _: bool) -> Result<Node<'de>, E> {
        Ok(Node::Scalar)
    }
    fn visit_i64<E: Error>(self, _: i64) -> Result<Node<'de>, E> {
        Ok(Node::Scalar)
    }
    fn visit_u64<E: Error>(self, _: u64) -> Result<Node<'de>, E> {
        Ok(Node::Scalar)
    }
    fn visit_f64<E: Error>(self, _: f64) -> Result<Node<'de>, E> {
        Ok(Node::Scalar)
    }
    fn visit_str<E: Error>(self, _: &str) -> Result<Node<'de>, E> {
        Ok(Node::Scalar)
    }
    fn visit_unit<E: Error>(self) -> Result<Node<'de>, E> {
        Ok(Node::Scalar)
    }
}
