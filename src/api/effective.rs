//! Effective settings: the spec with every default applied, block by block.
//!
//! Each block's module owns its defaults and its view; this only puts them together. The hook
//! never relies on the API server having defaulted the stored object (it may predate the CRD,
//! or come from a replayed fixture).

use k8s_openapi::api::core::v1::ResourceRequirements;

use super::MemcachedSpec;
use super::autoscaling::Autoscaling;
use super::high_availability::HighAvailability;
use super::memcached::Server;
use super::monitoring::Monitoring;
use super::security::Security;
use super::service::Service;
use super::spec::{DEFAULT_IMAGE, DEFAULT_REPLICAS};

/// A Memcached spec with every default resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Effective<'a> {
    /// Desired replicas; `None` when autoscaling owns the count.
    pub replicas: Option<i32>,
    /// memcached image (an explicit `""` is kept, for validation to reject).
    pub image: &'a str,
    /// memcached container resources.
    pub resources: Option<&'a ResourceRequirements>,
    /// `spec.memcached`.
    pub memcached: Server<'a>,
    /// `spec.highAvailability`.
    pub high_availability: HighAvailability<'a>,
    /// `spec.monitoring`, when enabled.
    pub monitoring: Option<Monitoring<'a>>,
    /// `spec.security`.
    pub security: Security<'a>,
    /// `spec.autoscaling`, when enabled.
    pub autoscaling: Option<Autoscaling>,
    /// `spec.service`.
    pub service: Service<'a>,
}

impl<'a> Effective<'a> {
    /// Resolves every default of `spec`.
    #[must_use]
    pub fn of(spec: &'a MemcachedSpec) -> Self {
        let autoscaling = Autoscaling::of(spec.autoscaling.as_ref());
        Self {
            replicas: match autoscaling {
                Some(_) => None,
                None => Some(spec.replicas.unwrap_or(DEFAULT_REPLICAS)),
            },
            image: spec.image.as_deref().unwrap_or(DEFAULT_IMAGE),
            resources: spec.resources.as_ref(),
            memcached: Server::of(spec.memcached.as_ref()),
            high_availability: HighAvailability::of(spec.high_availability.as_ref()),
            monitoring: Monitoring::of(spec.monitoring.as_ref()),
            security: Security::of(spec.security.as_ref()),
            autoscaling,
            service: Service::of(spec.service.as_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_spec_gets_the_webhook_defaults() {
        let spec = MemcachedSpec::default();
        let e = Effective::of(&spec);
        assert_eq!(e.replicas, Some(1));
        assert_eq!(e.image, "memcached:1.6");
        assert_eq!(e.memcached, Server::of(None));
        assert_eq!(e.high_availability, HighAvailability::default());
        assert!(e.monitoring.is_none() && e.autoscaling.is_none());
    }

    #[test]
    fn explicit_empty_image_is_kept_for_validation_to_reject() {
        let spec = MemcachedSpec {
            image: Some(String::new()),
            ..MemcachedSpec::default()
        };
        assert_eq!(Effective::of(&spec).image, "");
    }
}
