//! The Memcached custom resource, one module per spec block (`memcached`, `high_availability`,
//! `monitoring`, `security`, `autoscaling`, `service`, `discovery`, `pod`, `zones`, `warm_restart`, `extstore`, `proxy`; the other top-level fields in `spec`). Each
//! block holds its types, its bounds and defaults as constants used by both the schema and the
//! checks, its effective view and its rules; `effective` and `validation` put them together.

pub mod apiserver;
pub mod autoscaling;
pub mod bounded;
pub mod bounds;
mod check;
pub mod child_metadata;
pub mod command_line;
mod crd;
pub mod discovery;
pub mod effective;
pub mod extstore;
pub mod hardening;
pub mod high_availability;
pub mod memcached;
pub mod monitoring;
pub mod pod;
pub mod proxy;
pub mod quantity;
pub mod security;
pub mod service;
mod spec;
mod status;
pub mod validation;
pub mod warm_restart;
pub mod zones;

pub use autoscaling::AutoscalingSpec;
pub use crd::{crd, crd_yaml};
pub use discovery::{DiscoverySpec, ServerListConfigMapSpec};
pub use extstore::{ExtstoreSpec, ExtstoreVolume};
pub use hardening::HardeningSpec;
pub use high_availability::{
    AntiAffinityPreset, GracefulShutdownSpec, HighAvailabilitySpec, PdbSpec,
    UnhealthyPodEvictionPolicy,
};
pub use memcached::MemcachedConfig;
pub use monitoring::{MonitoringSpec, ServiceMonitorSpec};
pub use proxy::ProxySpec;
pub use security::{NetworkPolicySpec, SaslSpec, SecretRef, SecuritySpec, TlsSpec, TlsVersion};
pub use service::ServiceSpec;
pub use spec::*;
pub use status::{Condition, MemcachedStatus, ProxyStatus, ProxyZoneStatus, ZoneStatus};
pub use warm_restart::WarmRestartSpec;
pub use zones::ZonesSpec;

/// API group of the Memcached resource.
pub const GROUP: &str = "memcached.c5c3.io";
/// Kind of the parent resource.
pub const KIND: &str = "Memcached";
/// Versions the hook accepts (identical schemas).
pub const VERSIONS: [&str; 2] = ["v1beta1", "v1alpha1"];
