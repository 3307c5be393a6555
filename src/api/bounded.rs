//! A list decoded only up to its bound.
//!
//! A spec list with a bound (`tolerations`, `highAvailability.topologySpreadConstraints`,
//! `security.networkPolicy.allowedSources`) is checked against it anyway, so decoding more than
//! the bound allows only costs memory: 3 MB of `{}` decoded as tolerations took about 190 MB.
//! [`Bounded`] decodes the first `MAX` items and counts the others without decoding or storing
//! them (serde's `IgnoredAny`), so an over-long list costs memory for `MAX` items and the
//! `Too many` violation still gives the count as sent. A list beyond its bound is invalid
//! whatever the rest holds: items past the bound are not checked for their shape.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The first `MAX` items of a list, and how many it had.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounded<T, const MAX: usize> {
    items: Vec<T>,
    count: usize,
}

impl<T, const MAX: usize> Bounded<T, MAX> {
    /// How many items the list had, decoded or not.
    #[must_use]
    pub fn count(&self) -> usize {
        self.count
    }
}

impl<T, const MAX: usize> From<Vec<T>> for Bounded<T, MAX> {
    fn from(items: Vec<T>) -> Self {
        Self {
            count: items.len(),
            items,
        }
    }
}

impl<T, const MAX: usize> Deref for Bounded<T, MAX> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for Bounded<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor<T, const MAX: usize>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for ListVisitor<T, MAX> {
            type Value = Bounded<T, MAX>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX));
                while items.len() < MAX {
                    match seq.next_element()? {
                        Some(item) => items.push(item),
                        None => return Ok(items.into()),
                    }
                }
                let mut count = items.len();
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    count += 1;
                }
                Ok(Bounded { items, count })
            }
        }

        deserializer.deserialize_seq(ListVisitor::<T, MAX>(PhantomData))
    }
}

impl<T: Serialize, const MAX: usize> Serialize for Bounded<T, MAX> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.items.serialize(serializer)
    }
}

impl<T: JsonSchema, const MAX: usize> JsonSchema for Bounded<T, MAX> {
    fn inline_schema() -> bool {
        Vec::<T>::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        Vec::<T>::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Vec::<T>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_past_the_bound_are_counted_not_decoded() {
        let list: Bounded<u8, 2> = serde_json::from_str("[1, 2, 3, {}, [], \"x\"]").expect("list");
        assert_eq!(&*list, &[1, 2]);
        assert_eq!(list.count(), 6);
        let list: Bounded<u8, 2> = serde_json::from_str("[1]").expect("list");
        assert_eq!((&*list, list.count()), (&[1][..], 1));
        // Within the bound every item is decoded as before.
        assert!(serde_json::from_str::<Bounded<u8, 2>>("[1, {}]").is_err());
        assert_eq!(
            serde_json::to_string(&Bounded::<u8, 2>::from(vec![1, 2])).expect("json"),
            "[1,2]"
        );
    }
}
