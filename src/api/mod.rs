//! The Memcached custom resource: spec and status types, effective defaults, validation and the
//! generated CRD.

mod crd;
pub mod effective;
pub mod quantity;
mod spec;
mod status;
pub mod validation;

pub use crd::{crd, crd_yaml};
pub use spec::*;
pub use status::{Condition, MemcachedStatus};

/// API group of the Memcached resource.
pub const GROUP: &str = "memcached.c5c3.io";
/// Kind of the parent resource.
pub const KIND: &str = "Memcached";
/// Versions the hook accepts (identical schemas).
pub const VERSIONS: [&str; 2] = ["v1beta1", "v1alpha1"];
