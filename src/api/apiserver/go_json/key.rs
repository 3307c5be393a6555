//! A map key's encoded length: JSON object keys are strings, so serde_json quotes a number or
//! a bool and refuses anything else.

use serde::ser::{self, Serialize};

use super::{Counter, Result, Unencodable, string_len};

/// A map key: a string as itself, a number or a bool quoted (as serde_json writes it),
/// anything else refused (as serde_json refuses it).
pub(super) struct KeyCounter;

/// What serde_json says of a key that is not a string, a number or a bool.
fn not_a_key() -> Unencodable {
    ser::Error::custom("key must be a string")
}

macro_rules! quoted {
    ($($method:ident($ty:ty)),*) => {
        $(fn $method(self, v: $ty) -> Result {
            Counter.$method(v).map(|n| n + 2)
        })*
    };
}

macro_rules! refused {
    ($($method:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(fn $method(self, $($arg: $ty),*) -> Result<$ret> {
            $(let _ = $arg;)*
            Err(not_a_key())
        })*
    };
}

impl ser::Serializer for KeyCounter {
    type Ok = usize;
    type Error = Unencodable;
    type SerializeSeq = ser::Impossible<usize, Unencodable>;
    type SerializeTuple = ser::Impossible<usize, Unencodable>;
    type SerializeTupleStruct = ser::Impossible<usize, Unencodable>;
    type SerializeTupleVariant = ser::Impossible<usize, Unencodable>;
    type SerializeMap = ser::Impossible<usize, Unencodable>;
    type SerializeStruct = ser::Impossible<usize, Unencodable>;
    type SerializeStructVariant = ser::Impossible<usize, Unencodable>;

    fn serialize_str(self, v: &str) -> Result {
        Ok(string_len(v))
    }
    fn serialize_char(self, v: char) -> Result {
        Counter.serialize_char(v)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        Ok(string_len(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result {
        v.serialize(self)
    }
    quoted!(serialize_bool(bool), serialize_f32(f32), serialize_f64(f64));
    quoted!(
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64)
    );
    quoted!(
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32)
    );
    quoted!(serialize_u64(u64), serialize_u128(u128));
    refused! {
        serialize_bytes(v: &[u8]) -> usize;
        serialize_none() -> usize;
        serialize_unit() -> usize;
        serialize_unit_struct(name: &'static str) -> usize;
        serialize_seq(len: Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(len: usize) -> Self::SerializeTuple;
        serialize_tuple_struct(name: &'static str, len: usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> Self::SerializeTupleVariant;
        serialize_map(len: Option<usize>) -> Self::SerializeMap;
        serialize_struct(name: &'static str, len: usize) -> Self::SerializeStruct;
        serialize_struct_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> Self::SerializeStructVariant;
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result {
        Err(not_a_key())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result {
        Err(not_a_key())
    }
}
