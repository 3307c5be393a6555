//! The forwarding list of the hook's two deserializer wrappers ([`super::strict`] and
//! [`super::shape`]): each writes the methods it changes and forwards the rest with this macro.

/// Every `Deserializer` method but `deserialize_struct` and `deserialize_ignored_any` (each
/// wrapper writes those two itself), forwarded to `self.0` with the visitor passed through
/// `$wrap`: [`super::strict::Strict`] in one, unchanged in [`super::shape::TopLevel`].
macro_rules! forward_deserialize {
    ($wrap:expr) => {
        forward_deserialize! { @ $wrap;
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
        }
    };
    (@ $wrap:expr; $($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method($($arg,)* $wrap(visitor))
            }
        )*
    };
}

pub(super) use forward_deserialize;
