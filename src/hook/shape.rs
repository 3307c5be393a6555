//! Objects are objects: a struct given as a JSON array is refused.
//!
//! serde's derived `Deserialize` of a struct also accepts a sequence and reads it by position
//! (`"spec": [5]` would be `replicas: 5`), and serde_json offers it one when it finds `[`. The
//! API server never sends an array for an object, so one means the request was not produced by
//! it. [`ObjectOnly`] wraps a struct's visitor so that a sequence gets serde's own error,
//! `invalid type: sequence, expected struct MemcachedSpec`, answered with 422 like any other
//! request of the wrong shape. [`super::strict::Strict`] applies it to every struct below the
//! fields it wraps, [`TopLevel`] to the request itself.

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};

use super::forward::forward_deserialize;

/// A struct's visitor that takes an object only. serde_json offers a struct only a sequence
/// (`[`) or an object (`{`) and reports anything else itself, so `visit_map` is all that is
/// forwarded; `visit_seq` is serde's default, `invalid type: sequence, expected ...`.
pub struct ObjectOnly<V>(pub V);

impl<'de, V: Visitor<'de>> Visitor<'de> for ObjectOnly<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(map)
    }
}

/// A deserializer whose own value, when read as a struct, must be an object (what is below it
/// is not wrapped: the request's fields are [`super::strict`]'s).
pub struct TopLevel<D>(pub D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for TopLevel<D> {
    type Error = D::Error;

    forward_deserialize!(std::convert::identity);

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_ignored_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_struct(name, fields, ObjectOnly(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Point {
        x: i32,
        #[serde(default)]
        y: i32,
    }

    fn decode(text: &str) -> Result<Point, String> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        Point::deserialize(TopLevel(&mut deserializer)).map_err(|e| e.to_string())
    }

    #[test]
    fn an_array_is_not_read_by_position() {
        assert_eq!(decode(r#"{"x": 1}"#), Ok(Point { x: 1, y: 0 }));
        let plain: Point = serde_json::from_str("[1, 2]").expect("serde reads it by position");
        assert_eq!(plain, Point { x: 1, y: 2 });
        let err = decode("[1, 2]").expect_err("an array for a struct");
        assert!(
            err.starts_with("invalid type: sequence, expected struct Point"),
            "{err}"
        );
        let err = decode("5").expect_err("a number for a struct");
        assert!(
            err.starts_with("invalid type: integer `5`, expected struct Point"),
            "{err}"
        );
    }
}
