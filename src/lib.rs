//! memcached-hook: a Metacontroller CompositeController sync hook that runs Memcached.
//!
//! The work is one pure function, [`sync`]: from a sync request as received
//! ([`hook::Received`]: the parent `Memcached`, its observed children and the calling
//! CompositeController, with the body they came in) and the current time to the desired
//! children and the parent's status. It does no I/O, takes no lock and keeps no state. The HTTP
//! server ([`server`]) and the CLI are thin shells around it.

pub mod api;
pub mod children;
pub mod hook;
pub mod http_client;
pub mod keep;
#[cfg(test)]
mod layers;
pub mod mounted;
pub mod pod;
pub mod process;
pub mod secrets;
pub mod server;
pub mod status;
mod sync;
pub mod workload;

pub use sync::{Options, SyncError, customize, sync};
