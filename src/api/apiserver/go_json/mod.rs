//! The length of a value as Go's `encoding/json` encodes it (Metacontroller's copy of a child),
//! counted by a serde `Serializer` that writes nothing: serde_json's encoding in its compact
//! form, plus Go's longer escapes. Counting costs a few instructions per byte of the strings
//! and nothing per structural character, about a third of encoding into a counting writer,
//! which matters because every child of every sync is measured.

use std::fmt::{self, Display};

use serde::ser::{self, Serialize};

use self::key::KeyCounter;

mod key;

/// The encoded length of `value` (see the module's doc); `None` if it cannot be encoded.
pub(super) fn len<T: Serialize + ?Sized>(value: &T) -> Option<usize> {
    value.serialize(Counter).ok()
}

/// Bytes an escape adds to a byte of a string: `"` and `\` as two bytes, `\n`, `\r`, `\t` as
/// two, other control characters as `\u00XX` (six; Go before 1.22 wrote `\b` and `\f` so too,
/// serde_json and newer Go as two: the longer one is counted), and Go's `<`, `>` and `&` as
/// `\u003c` (six).
const EXTRA: [u8; 256] = {
    let mut extra = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        extra[b] = 5;
        b += 1;
    }
    extra[b'\n' as usize] = 1;
    extra[b'\r' as usize] = 1;
    extra[b'\t' as usize] = 1;
    extra[b'"' as usize] = 1;
    extra[b'\\' as usize] = 1;
    extra[b'<' as usize] = 5;
    extra[b'>' as usize] = 5;
    extra[b'&' as usize] = 5;
    extra
};

/// A string's encoded length, quotes included. U+2028 and U+2029 (3 bytes) become `\u2028`
/// (6) in Go.
fn string_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let extra: usize = bytes
        .iter()
        .map(|&b| usize::from(EXTRA[usize::from(b)]))
        .sum();
    let separators = if bytes.contains(&0xE2) {
        text.matches(['\u{2028}', '\u{2029}']).count() * 3
    } else {
        0
    };
    2 + bytes.len() + extra + separators
}

/// Decimal digits of `n`.
fn digits(mut n: u128) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

fn signed(n: i128) -> usize {
    usize::from(n < 0) + digits(n.unsigned_abs())
}

/// Why a value cannot be counted (what serde_json would refuse too).
#[derive(Debug)]
pub(super) struct Unencodable(String);

impl Display for Unencodable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unencodable {}

impl ser::Error for Unencodable {
    fn custom<T: Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

type Result<T = usize> = std::result::Result<T, Unencodable>;

/// Counts the encoded length of one value.
#[derive(Clone, Copy)]
struct Counter;

/// An object or array being counted: the bytes so far and whether an entry was written (a
/// comma goes before every entry but the first).
struct Compound {
    bytes: usize,
    first: bool,
}

impl Compound {
    fn new() -> Self {
        // The opening and the closing bracket.
        Self {
            bytes: 2,
            first: true,
        }
    }

    fn comma(&mut self) {
        if !std::mem::replace(&mut self.first, false) {
            self.bytes += 1;
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.comma();
        self.bytes += value.serialize(Counter)?;
        Ok(())
    }

    /// `"key":value`.
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<()> {
        self.comma();
        self.bytes += string_len(key) + 1 + value.serialize(Counter)?;
        Ok(())
    }
}

macro_rules! numbers {
    (signed: $($s:ident($st:ty)),*; digits: $($u:ident($ut:ty)),*;) => {
        $(fn $s(self, v: $st) -> Result {
            Ok(signed(v.into()))
        })*
        $(fn $u(self, v: $ut) -> Result {
            Ok(digits(v.into()))
        })*
    };
}

impl ser::Serializer for Counter {
    type Ok = usize;
    type Error = Unencodable;
    type SerializeSeq = Compound;
    type SerializeTuple = Compound;
    type SerializeTupleStruct = Compound;
    type SerializeTupleVariant = Variant;
    type SerializeMap = Compound;
    type SerializeStruct = Compound;
    type SerializeStructVariant = Variant;

    fn serialize_bool(self, v: bool) -> Result {
        Ok(if v { 4 } else { 5 })
    }
    numbers! {
        signed: serialize_i8(i8), serialize_i16(i16), serialize_i32(i32), serialize_i64(i64);
        digits: serialize_u8(u8), serialize_u16(u16), serialize_u32(u32), serialize_u64(u64);
    }
    fn serialize_i128(self, v: i128) -> Result {
        Ok(signed(v))
    }
    fn serialize_u128(self, v: u128) -> Result {
        Ok(digits(v))
    }
    fn serialize_f32(self, v: f32) -> Result {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result {
        // Rare in a child (no Kubernetes type the hook writes has one): serde_json says.
        serde_json::to_string(&v)
            .map(|text| text.len())
            .map_err(ser::Error::custom)
    }
    fn serialize_char(self, v: char) -> Result {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result {
        Ok(string_len(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result {
        // An array of numbers.
        let numbers: usize = v.iter().map(|&b| digits(b.into())).sum();
        Ok(2 + numbers + v.len().saturating_sub(1))
    }
    fn serialize_none(self) -> Result {
        Ok(4)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        Ok(4)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result {
        Ok(4)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        Ok(string_len(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        Ok(2 + string_len(variant) + 1 + value.serialize(self)?)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound> {
        Ok(Compound::new())
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound> {
        Ok(Compound::new())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound> {
        Ok(Compound::new())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant> {
        Ok(Variant::new(variant))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound> {
        Ok(Compound::new())
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Compound> {
        // serde_json's raw values ask for a struct of this name; the hook's children hold none.
        if name == "$serde_json::private::RawValue" {
            return Err(ser::Error::custom("a raw value is not counted"));
        }
        Ok(Compound::new())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant> {
        Ok(Variant::new(variant))
    }
}

macro_rules! elements {
    ($($trait:ident::$method:ident),*) => {
        $(impl ser::$trait for Compound {
            type Ok = usize;
            type Error = Unencodable;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
                self.element(value)
            }
            fn end(self) -> Result {
                Ok(self.bytes)
            }
        })*
    };
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::SerializeMap for Compound {
    type Ok = usize;
    type Error = Unencodable;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.comma();
        // serde_json quotes a key that is not a string (a number, a bool).
        self.bytes += key.serialize(KeyCounter)? + 1;
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.bytes += value.serialize(Counter)?;
        Ok(())
    }
    fn end(self) -> Result {
        Ok(self.bytes)
    }
}

impl ser::SerializeStruct for Compound {
    type Ok = usize;
    type Error = Unencodable;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<()> {
        self.field(key, v)
    }
    fn end(self) -> Result {
        Ok(self.bytes)
    }
}

/// A variant with content: `{"variant":[...]}` or `{"variant":{...}}`.
struct Variant {
    inner: Compound,
    /// `{`, the variant's name, `:` and `}`.
    around: usize,
}

impl Variant {
    fn new(variant: &str) -> Self {
        Self {
            inner: Compound::new(),
            around: 2 + string_len(variant) + 1,
        }
    }
}

impl ser::SerializeTupleVariant for Variant {
    type Ok = usize;
    type Error = Unencodable;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.inner.element(value)
    }
    fn end(self) -> Result {
        Ok(self.around + self.inner.bytes)
    }
}

impl ser::SerializeStructVariant for Variant {
    type Ok = usize;
    type Error = Unencodable;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<()> {
        self.inner.field(key, v)
    }
    fn end(self) -> Result {
        Ok(self.around + self.inner.bytes)
    }
}
