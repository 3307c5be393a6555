//! Duplicate keys: no JSON object the hook reads may repeat a key.
//!
//! serde's derived structs already refuse a repeated field they know, but a map
//! (`BTreeMap<String, String>` for labels and annotations, the resource lists of
//! `ResourceRequirements`, the `matchLabels` of a selector, Metacontroller's children and related
//! maps) and k8s-openapi's hand-written struct decoders silently keep the last value. The API
//! server never sends a duplicate key, so one means the request was not produced by it: the hook
//! would act on one of two contradicting values. [`Strict`] wraps a deserializer so that every
//! object decoded through it refuses a repeated key, with the error `duplicate key "app"` at the
//! object's JSON path; the server answers it with 422 like any other request of the wrong shape.
//!
//! Hand-written because no crate does it for foreign types: serde_json has no duplicate-key
//! option, and per-field helpers (serde_with's duplicate-key-is-error maps) only reach maps
//! declared in the hook's own types, not those inside k8s-openapi's.
//!
//! Content the hook never reads is skipped as [`serde::de::IgnoredAny`] (`managedFields`, pod
//! templates, unknown fields, annotations of children other than the last-applied and
//! running-layouts ones): its decoder is handed the unwrapped deserializer, so it stays
//! unchecked and costs nothing more.
//! The keys of an object the hook does read are all checked, known or not.
//!
//! The check is cheap: each key is compared against the keys seen before in the same object,
//! borrowed from the request body when it has no escapes (no allocation per key). The first
//! [`INLINE_KEYS`] keys of an object are kept in place and compared one by one, so the objects
//! the hook reads allocate nothing; a larger object's further keys go into a hash set, so that a
//! huge object cannot make the check quadratic.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StrDeserializer};
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

use super::forward::forward_deserialize;

/// Keys of an object kept in place and compared one by one, without an allocation (a parent's
/// `metadata` has about ten); more go into a hash set.
const INLINE_KEYS: usize = 16;

/// A key longer than this is shortened in the error message.
const SHOWN_KEY_LENGTH: usize = 64;

/// Decodes `T` refusing a repeated key in every object on the way (a `deserialize_with`
/// function).
///
/// # Errors
/// A duplicate key, or whatever `T` refuses.
pub fn deserialize<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: de::Deserialize<'de>,
{
    T::deserialize(Strict(deserializer))
}

/// A deserializer, visitor, seed or access whose objects refuse repeated keys.
pub struct Strict<T>(pub T);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward_deserialize!(Strict);

    /// A struct must be an object ([`super::shape`]), with unique keys.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let visitor = super::shape::ObjectOnly(Strict(visitor));
        self.0.deserialize_struct(name, fields, visitor)
    }

    /// Skipped content is never read: it is not checked either.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_ignored_any(visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.0.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Strict<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
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
        self.0.visit_some(Strict(deserializer))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Strict(deserializer))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(Strict(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(UniqueKeys {
            map,
            seen: SeenKeys::new(),
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(Strict(data))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Strict<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(deserializer))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Strict(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Strict<A> {
    type Error = A::Error;
    type Variant = Strict<A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(seed)?;
        Ok((value, Strict(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Strict(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Strict(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Strict(visitor))
    }
}

/// The keys of one object so far: the first [`INLINE_KEYS`] in place (no allocation for most
/// objects), all further ones in a hash set.
struct SeenKeys<'de> {
    inline: [Cow<'de, str>; INLINE_KEYS],
    count: usize,
    more: Option<HashSet<Cow<'de, str>>>,
}

impl<'de> SeenKeys<'de> {
    fn new() -> Self {
        Self {
            inline: [const { Cow::Borrowed("") }; INLINE_KEYS],
            count: 0,
            more: None,
        }
    }

    fn contains(&self, key: &str) -> bool {
        let inline = &self.inline[..self.count.min(INLINE_KEYS)];
        inline.iter().any(|k| k.as_ref() == key)
            || self.more.as_ref().is_some_and(|more| more.contains(key))
    }

    fn insert(&mut self, key: Cow<'de, str>) {
        if self.count < INLINE_KEYS {
            self.inline[self.count] = key;
        } else {
            self.more.get_or_insert_with(HashSet::new).insert(key);
        }
        self.count += 1;
    }
}

/// An object's entries, refusing a key seen before in the same object.
struct UniqueKeys<'de, A> {
    map: A,
    seen: SeenKeys<'de>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for UniqueKeys<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some(key) = self.map.next_key_seed(KeySeed)? else {
            return Ok(None);
        };
        if self.seen.contains(&key) {
            return Err(de::Error::custom(format_args!(
                "duplicate key {}",
                shown(&key)
            )));
        }
        let value = match &key {
            Cow::Borrowed(text) => seed.deserialize(BorrowedStrDeserializer::new(text))?,
            Cow::Owned(text) => seed.deserialize(StrDeserializer::new(text))?,
        };
        self.seen.insert(key);
        Ok(Some(value))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.map.next_value_seed(Strict(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A key as text, borrowed from the input when it can be.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// `key` quoted as JSON, shortened to [`SHOWN_KEY_LENGTH`] characters.
fn shown(key: &str) -> String {
    match key.char_indices().nth(SHOWN_KEY_LENGTH) {
        None => serde_json::to_string(key).unwrap_or_default(),
        Some((end, _)) => format!(
            "{}... ({} bytes)",
            serde_json::to_string(&key[..end]).unwrap_or_default(),
            key.len()
        ),
    }
}

#[cfg(test)]
mod tests;
