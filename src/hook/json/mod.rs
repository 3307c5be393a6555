//! The fast path of [`super::decode`]: a JSON deserializer for well-formed requests.
//!
//! serde_json spends most of a sync's decoding on what the hook never reads (`managedFields`,
//! pod templates, children's status): about ten instructions per byte, token by token
//! (BENCHMARKS.md). This deserializer skips a string eight bytes at a time and a value
//! without serde's visitor machinery, and reads what the hook keeps exactly as serde_json does.
//!
//! It is only ever a shortcut: on anything it does not handle the same way as serde_json, or
//! that serde_json might refuse, it gives up ([`Bail`], no message, nothing allocated) and
//! [`super::decode`] decodes the body again with serde_json, whose value or error is then the
//! answer. It gives up on: any malformed JSON, trailing data, a number with a fraction or an
//! exponent or out of the 64-bit range where the hook reads it (and `-0`), a surrogate `\u`
//! escape where the hook reads the string, nesting deeper than 100 levels (serde_json's limit
//! is 128), an array where a struct is read (refused, `super::shape`), an enum written as an
//! object, bytes, 128-bit integers, and any error of the hook's own types (a duplicate key, a
//! wrong type, a value out of range). What it accepts, serde_json accepts with the same value: `tests` below, `tests/it/properties.rs` and the fuzz target
//! compare the two on every fixture and on generated and mangled requests.
//!
//! Skipped values are validated as serde_json validates what it skips: strings (no control
//! character, known escapes, four hex digits after `\u`), numbers (JSON's grammar), literals and
//! structure. The input is `&str`, so it is valid UTF-8.

use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use reader::{Integer, Json, Text};

mod reader;

/// The name under which serde_json's `RawValue` asks a deserializer for the raw text of a value
/// (serde_json's protocol between its `RawValue` and its deserializers; a test below decodes a
/// `RawValue` both ways, so a change of it fails the tests instead of the fast path).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Decodes `text` as one JSON document, or `None` where serde_json must decide.
pub fn from_str<'de, T: Deserialize<'de>>(text: &'de str) -> Option<T> {
    let mut json = Json::new(text);
    let value = T::deserialize(&mut json).ok()?;
    json.skip_whitespace();
    (json.pos == json.bytes.len()).then_some(value)
}

/// Giving up: serde_json decodes the body instead.
#[derive(Debug)]
pub struct Bail;

impl fmt::Display for Bail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to serde_json")
    }
}

impl std::error::Error for Bail {}

impl de::Error for Bail {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Self
    }
}

type Result<T> = std::result::Result<T, Bail>;

impl<'de> Text<'de> {
    fn visit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self {
            Self::Borrowed(s) => visitor.visit_borrowed_str(s),
            Self::Owned(s) => visitor.visit_string(s),
        }
    }
}

impl<'de> Json<'de> {
    fn visit_seq<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        self.enter()?;
        let value = visitor.visit_seq(Elements {
            json: self,
            first: true,
        })?;
        self.leave(b']')?;
        Ok(value)
    }

    fn visit_map<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        self.enter()?;
        let value = visitor.visit_map(Entries {
            json: self,
            first: true,
        })?;
        self.leave(b'}')?;
        Ok(value)
    }

    fn visit_integer<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        match self.integer()? {
            Integer::Unsigned(n) => visitor.visit_u64(n),
            Integer::Signed(n) => visitor.visit_i64(n),
        }
    }
}

/// Deserializer methods that take what serde_json's take, through `$via`.
macro_rules! accept_via {
    ($via:ident: $($method:ident$(($($arg:ident: $ty:ty),*))?;)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($($arg: $ty,)*)? visitor: V) -> Result<V::Value> {
                $($(let _ = $arg;)*)?
                self.$via(visitor)
            }
        )*
    };
}

/// Deserializer methods left to serde_json.
macro_rules! bail {
    ($($method:ident$(($($arg:ident: $ty:ty),*))?;)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($($arg: $ty,)*)? _: V) -> Result<V::Value> {
                $($(let _ = $arg;)*)?
                Err(Bail)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for &mut Json<'de> {
    type Error = Bail;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.peek()? {
            b'n' => {
                self.literal(b"null")?;
                visitor.visit_unit()
            }
            b't' => {
                self.literal(b"true")?;
                visitor.visit_bool(true)
            }
            b'f' => {
                self.literal(b"false")?;
                visitor.visit_bool(false)
            }
            b'"' => self.string()?.visit(visitor),
            b'-' | b'0'..=b'9' => self.visit_integer(visitor),
            b'[' => self.visit_seq(visitor),
            b'{' => self.visit_map(visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.peek()? {
            b't' | b'f' => self.deserialize_any(visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => self.visit_integer(visitor),
            _ => Err(Bail),
        }
    }

    accept_via! { deserialize_u64:
        deserialize_i8; deserialize_i16; deserialize_i32; deserialize_i64;
        deserialize_u8; deserialize_u16; deserialize_u32;
        deserialize_f32; deserialize_f64;
    }

    // serde_json reads these numbers past 64 bits and calls `visit_i128`/`visit_u128`.
    bail! { deserialize_i128; deserialize_u128; }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.peek()? {
            b'"' => self.string()?.visit(visitor),
            _ => Err(Bail),
        }
    }

    accept_via! { deserialize_str: deserialize_char; deserialize_string; deserialize_identifier; }

    fn deserialize_bytes<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Bail)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Bail)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.peek()? {
            b'n' => self.deserialize_any(visitor),
            _ => Err(Bail),
        }
    }

    accept_via! { deserialize_unit: deserialize_unit_struct(name: &'static str); }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == RAW_VALUE_TOKEN {
            self.skip_whitespace();
            let start = self.pos;
            self.skip_value()?;
            let raw = self.text.get(start..self.pos).ok_or(Bail)?;
            return visitor.visit_map(RawEntry(Some(raw)));
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.peek()? {
            b'[' => self.visit_seq(visitor),
            _ => Err(Bail),
        }
    }

    accept_via! { deserialize_seq:
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.peek()? {
            b'{' => self.visit_map(visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        // An array is refused where a struct is read (`super::shape`): serde_json says so.
        match self.peek()? {
            b'{' => self.visit_map(visitor),
            _ => Err(Bail),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        if self.peek()? != b'"' {
            return Err(Bail);
        }
        match self.string()? {
            Text::Borrowed(s) => visitor.visit_enum(BorrowedStrDeserializer::new(s)),
            Text::Owned(s) => visitor.visit_enum(StringDeserializer::new(s)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.skip_value()?;
        visitor.visit_unit()
    }
}

/// The elements of an array.
struct Elements<'a, 'de> {
    json: &'a mut Json<'de>,
    first: bool,
}

impl<'de> SeqAccess<'de> for Elements<'_, 'de> {
    type Error = Bail;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.json.peek()? == b']' {
            return Ok(None);
        }
        if !std::mem::replace(&mut self.first, false) {
            self.json.expect(b',')?;
        }
        seed.deserialize(&mut *self.json).map(Some)
    }
}

/// The entries of an object.
struct Entries<'a, 'de> {
    json: &'a mut Json<'de>,
    first: bool,
}

impl<'de> MapAccess<'de> for Entries<'_, 'de> {
    type Error = Bail;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.json.peek()? == b'}' {
            return Ok(None);
        }
        if !std::mem::replace(&mut self.first, false) {
            self.json.expect(b',')?;
        }
        if self.json.peek()? != b'"' {
            return Err(Bail);
        }
        let key = self.json.string()?;
        self.json.expect(b':')?;
        seed.deserialize(Key(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(&mut *self.json)
    }
}

/// An object's key. Read as text; anything else (a number or a bool parsed out of a key, which
/// serde_json does) is left to serde_json.
struct Key<'de>(Text<'de>);

impl<'de> Deserializer<'de> for Key<'de> {
    type Error = Bail;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.0.visit(visitor)
    }

    accept_via! { deserialize_any:
        deserialize_str; deserialize_string; deserialize_identifier; deserialize_char;
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    bail! {
        deserialize_bool; deserialize_i8; deserialize_i16; deserialize_i32; deserialize_i64;
        deserialize_i128; deserialize_u8; deserialize_u16; deserialize_u32; deserialize_u64;
        deserialize_u128; deserialize_f32; deserialize_f64; deserialize_bytes;
        deserialize_byte_buf; deserialize_option; deserialize_unit;
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq; deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map;
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }
}

/// The one entry serde_json's `RawValue` reads: its token, then the raw text of the value.
struct RawEntry<'de>(Option<&'de str>);

impl<'de> MapAccess<'de> for RawEntry<'de> {
    type Error = Bail;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.0.is_none() {
            return Ok(None);
        }
        seed.deserialize(BorrowedStrDeserializer::new(RAW_VALUE_TOKEN))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let raw = self.0.take().ok_or(Bail)?;
        seed.deserialize(BorrowedStrDeserializer::new(raw))
    }
}

#[cfg(test)]
mod tests;
