//! Objects are objects: a struct given as a JSON array is refused.
//!
//! serde's derived `Deserialize` of a struct also accepts a sequence and reads it by position
//! (`"spec": [5]` would be `replicas: 5`), and serde_json offers it one when it finds `[`. The
//! API server never sends an array for an object, so one means the request was not produced by
//! it. [`ObjectOnly`] wraps a struct's visitor so that a sequence gets serde's own error,
//! `invalid type: sequence, expected struct MemcachedSpec`, answered with 422 like any other
//! request of the wrong shape. [`super::strict::Strict`] applies it to every struct below the
//! fields it wraps, [`TopLevel`] to the request itself. The fast path ([`super::json`]) leaves
//! an array where a struct is read to serde_json, so both paths give this error.

use std::fmt;

use serde::de::{self, Deserializer, EnumAccess, MapAccess, Visitor};

/// A struct's visitor that takes an object only.
pub struct ObjectOnly<V>(pub V);

macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.0.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for ObjectOnly<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    // `visit_seq` is left to serde's default: `invalid type: sequence, expected ...`.

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(map)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i64(i64);
        visit_i128(i128);
        visit_u64(u64);
        visit_u128(u128);
        visit_f64(f64);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(deserializer)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(data)
    }
}

/// A deserializer whose own value, when read as a struct, must be an object (what is below it
/// is not wrapped: the request's fields are [`super::strict`]'s).
pub struct TopLevel<D>(pub D);

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method($($arg,)* visitor)
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for TopLevel<D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
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
