//! The fast path of [`super::decode`]: a JSON deserializer for well-formed requests.
//!
//! serde_json spends most of a sync's decoding on what the hook never reads (`managedFields`,
//! pod templates, children's status): about ten instructions per byte, token by token
//! (BENCHMARKS.md, issue 17). This deserializer skips a string eight bytes at a time and a value
//! without serde's visitor machinery, and reads what the hook keeps exactly as serde_json does.
//!
//! It is only ever a shortcut: on anything it does not handle the same way as serde_json, or
//! that serde_json might refuse, it gives up ([`Bail`], no message, nothing allocated) and
//! [`super::decode`] decodes the body again with serde_json, whose value or error is then the
//! answer. It gives up on: any malformed JSON, trailing data, a number with a fraction or an
//! exponent or out of the 64-bit range where the hook reads it (and `-0`), a surrogate `\u`
//! escape where the hook reads the string, nesting deeper than [`MAX_DEPTH`] (serde_json's limit
//! is 128), an enum written as an object, bytes, 128-bit integers, and any error of the hook's
//! own types (a duplicate key, a wrong type, a value out of range). What it accepts, serde_json
//! accepts with the same value: `tests` below, `tests/it/properties.rs` and the fuzz target
//! compare the two on every fixture and on generated and mangled requests.
//!
//! Skipped values are validated as serde_json validates what it skips: strings (no control
//! character, known escapes, four hex digits after `\u`), numbers (JSON's grammar), literals and
//! structure. The input is `&str`, so it is valid UTF-8.

use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// Deepest nesting of arrays and objects decoded here; deeper input goes to serde_json, whose
/// own limit (128) is then the one that applies.
const MAX_DEPTH: u32 = 100;

/// The name under which serde_json's `RawValue` asks a deserializer for the raw text of a value
/// (serde_json's protocol between its `RawValue` and its deserializers; a test below decodes a
/// `RawValue` both ways, so a change of it fails the tests instead of the fast path).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Decodes `text` as one JSON document, or `None` where serde_json must decide.
pub fn from_str<'de, T: Deserialize<'de>>(text: &'de str) -> Option<T> {
    let mut json = Json {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
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

/// A decoded string: borrowed from the input unless it had escapes.
enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> Text<'de> {
    fn visit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self {
            Self::Borrowed(s) => visitor.visit_borrowed_str(s),
            Self::Owned(s) => visitor.visit_string(s),
        }
    }
}

/// An integer as serde_json hands it to a visitor.
enum Integer {
    Unsigned(u64),
    Signed(i64),
}

/// The deserializer: the input and a position in it.
struct Json<'de> {
    text: &'de str,
    bytes: &'de [u8],
    pos: usize,
    depth: u32,
}

/// Eight copies of `byte`.
const fn splat(byte: u8) -> u64 {
    u64::from_ne_bytes([byte; 8])
}

/// Where the next byte that ends a run of plain string content is, from `from`: a quote, a
/// backslash or a control character (which JSON forbids in a string), or the end of the input.
/// Eight bytes at a time: a byte is flagged when it equals `"` or `\` or is below 0x20, and the
/// lowest flagged byte is exact (borrows only run towards higher bytes).
fn string_end(bytes: &[u8], from: usize) -> usize {
    const LOW: u64 = splat(0x01);
    const HIGH: u64 = splat(0x80);
    let mut pos = from;
    while let Some(chunk) = bytes.get(pos..pos + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let quote = word ^ splat(b'"');
        let backslash = word ^ splat(b'\\');
        let flagged = ((quote.wrapping_sub(LOW) & !quote)
            | (backslash.wrapping_sub(LOW) & !backslash)
            | (word.wrapping_sub(splat(0x20)) & !word))
            & HIGH;
        if flagged != 0 {
            return pos + (flagged.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    while let Some(&byte) = bytes.get(pos) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        pos += 1;
    }
    pos
}

impl<'de> Json<'de> {
    /// Skips whitespace. Inline, for the common case of none (every byte of JSON's whitespace
    /// is at most a space; every other byte between tokens is above).
    #[inline]
    fn skip_whitespace(&mut self) {
        if self.bytes.get(self.pos).is_some_and(|&byte| byte > b' ') {
            return;
        }
        self.skip_whitespace_run();
    }

    /// Skips whitespace; runs of spaces (the indentation of a pretty-printed body) eight bytes
    /// at a time.
    fn skip_whitespace_run(&mut self) {
        let bytes = self.bytes;
        let mut pos = self.pos;
        loop {
            while let Some(chunk) = bytes.get(pos..pos + 8) {
                let mut word = [0; 8];
                word.copy_from_slice(chunk);
                let other = u64::from_le_bytes(word) ^ splat(b' ');
                if other != 0 {
                    pos += (other.trailing_zeros() / 8) as usize;
                    break;
                }
                pos += 8;
            }
            match bytes.get(pos) {
                Some(b' ' | b'\n' | b'\r' | b'\t') => pos += 1,
                _ => break,
            }
        }
        self.pos = pos;
    }

    /// The next byte after whitespace, not consumed.
    #[inline]
    fn peek(&mut self) -> Result<u8> {
        self.skip_whitespace();
        self.bytes.get(self.pos).copied().ok_or(Bail)
    }

    /// Consumes `byte` after whitespace.
    #[inline]
    fn expect(&mut self, byte: u8) -> Result<()> {
        if self.peek()? == byte {
            self.pos += 1;
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// Consumes the literal `word` (`null`, `true`, `false`) at the current position.
    fn literal(&mut self, word: &[u8]) -> Result<()> {
        if self.bytes.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Bail)
        }
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Bail);
        }
        self.pos += 1;
        Ok(())
    }

    /// Consumes `close` after the content of an array or object.
    fn leave(&mut self, close: u8) -> Result<()> {
        self.expect(close)?;
        self.depth -= 1;
        Ok(())
    }

    /// The string whose opening quote is at the current position.
    fn string(&mut self) -> Result<Text<'de>> {
        let start = self.pos + 1;
        let end = string_end(self.bytes, start);
        match self.bytes.get(end) {
            Some(b'"') => {
                self.pos = end + 1;
                self.text.get(start..end).map(Text::Borrowed).ok_or(Bail)
            }
            Some(b'\\') => self.escaped(start, end).map(Text::Owned),
            _ => Err(Bail),
        }
    }

    /// The rest of a string from `start` that has an escape at `escape`, unescaped.
    fn escaped(&mut self, start: usize, mut escape: usize) -> Result<String> {
        let mut out = String::with_capacity(escape - start + 16);
        let mut from = start;
        loop {
            out.push_str(self.text.get(from..escape).ok_or(Bail)?);
            let kind = *self.bytes.get(escape + 1).ok_or(Bail)?;
            from = escape + 2;
            out.push(match kind {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let code = self.hex4(from)?;
                    from += 4;
                    // A surrogate pairs with the next escape or is refused: serde_json decides.
                    char::from_u32(code).ok_or(Bail)?
                }
                _ => return Err(Bail),
            });
            escape = string_end(self.bytes, from);
            match self.bytes.get(escape) {
                Some(b'"') => {
                    out.push_str(self.text.get(from..escape).ok_or(Bail)?);
                    self.pos = escape + 1;
                    return Ok(out);
                }
                Some(b'\\') => {}
                _ => return Err(Bail),
            }
        }
    }

    /// The four hex digits at `at`.
    fn hex4(&self, at: usize) -> Result<u32> {
        let digits = self.bytes.get(at..at + 4).ok_or(Bail)?;
        digits.iter().try_fold(0, |code, &digit| {
            let value = char::from(digit).to_digit(16).ok_or(Bail)?;
            Ok(code * 16 + value)
        })
    }

    /// Skips the string whose opening quote is at the current position.
    fn skip_string(&mut self) -> Result<()> {
        let mut pos = self.pos + 1;
        loop {
            pos = string_end(self.bytes, pos);
            match self.bytes.get(pos) {
                Some(b'"') => {
                    self.pos = pos + 1;
                    return Ok(());
                }
                Some(b'\\') => match self.bytes.get(pos + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => pos += 2,
                    Some(b'u') => {
                        self.hex4(pos + 2)?;
                        pos += 6;
                    }
                    _ => return Err(Bail),
                },
                _ => return Err(Bail),
            }
        }
    }

    /// Consumes digits from the current position; how many.
    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Skips the integer part of a number (after its sign): `0` or digits not starting with `0`.
    fn skip_integer(&mut self) -> Result<()> {
        match self.bytes.get(self.pos) {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
                    return Err(Bail);
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(Bail),
        }
        Ok(())
    }

    /// Skips the number at the current position, checking JSON's grammar.
    fn skip_number(&mut self) -> Result<()> {
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        self.skip_integer()?;
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(Bail);
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(Bail);
            }
        }
        Ok(())
    }

    /// The integer at the current position, as serde_json hands it to a visitor: `u64` when not
    /// negative, `i64` when negative. Floats, `-0` and integers out of range are left to serde_json.
    fn integer(&mut self) -> Result<Integer> {
        let negative = self.bytes.get(self.pos) == Some(&b'-');
        if negative {
            self.pos += 1;
        }
        let start = self.pos;
        self.skip_integer()?;
        if let Some(b'.' | b'e' | b'E') = self.bytes.get(self.pos) {
            return Err(Bail);
        }
        let magnitude = self.bytes[start..self.pos]
            .iter()
            .try_fold(0_u64, |n, &digit| {
                n.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
            });
        match (negative, magnitude) {
            (false, Some(n)) => Ok(Integer::Unsigned(n)),
            (true, Some(n)) if n > 0 => 0_i64
                .checked_sub_unsigned(n)
                .map(Integer::Signed)
                .ok_or(Bail),
            _ => Err(Bail),
        }
    }

    /// Skips the value at the next position.
    fn skip_value(&mut self) -> Result<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => {
                self.enter()?;
                if self.peek()? != b'}' {
                    loop {
                        if self.peek()? != b'"' {
                            return Err(Bail);
                        }
                        self.skip_string()?;
                        self.expect(b':')?;
                        self.skip_value()?;
                        if self.peek()? != b',' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                self.leave(b'}')
            }
            b'[' => {
                self.enter()?;
                if self.peek()? != b']' {
                    loop {
                        self.skip_value()?;
                        if self.peek()? != b',' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                self.leave(b']')
            }
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => Err(Bail),
        }
    }

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
        match self.peek()? {
            b'{' => self.visit_map(visitor),
            b'[' => self.visit_seq(visitor),
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
