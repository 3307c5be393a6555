//! Effective settings: the spec with every default applied, block by block.
//!
//! Each block's module owns its defaults and its view; this only puts them together. The hook
//! never relies on the API server having defaulted the stored object (it may predate the CRD,
//! or come from a replayed fixture).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::autoscaling::Autoscaling;
use super::child_metadata::ChildMetadata;
use super::discovery::Discovery;
use super::extstore::Extstore;
use super::high_availability::HighAvailability;
use super::memcached::{Server, memory_request_mib};
use super::monitoring::{DEFAULT_EXPORTER_IMAGE, Monitoring};
use super::pod::Pod;
use super::proxy::Proxy;
use super::security::Security;
use super::service::Service;
use super::spec::{DEFAULT_IMAGE, DEFAULT_REPLICAS};
use super::warm_restart::WarmRestart;
use super::zones::Zones;
use super::{MemcachedSpec, Workload};

/// The images a Memcached gets when its spec names none: the hook's `--default-image` and
/// `--default-exporter-image`, so that a mirror is configured once for every Memcached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageDefaults<'a> {
    /// memcached image when `spec.image` is absent.
    pub memcached: &'a str,
    /// Exporter image when `spec.monitoring.exporterImage` is absent.
    pub exporter: &'a str,
}

impl ImageDefaults<'static> {
    /// The hook's built-in defaults ([`DEFAULT_IMAGE`], [`DEFAULT_EXPORTER_IMAGE`]).
    pub const BUILT_IN: Self = Self {
        memcached: DEFAULT_IMAGE,
        exporter: DEFAULT_EXPORTER_IMAGE,
    };
}

/// A Memcached spec with every default resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Effective<'a> {
    /// Desired replicas; `None` when autoscaling owns the count.
    pub replicas: Option<i32>,
    /// The workload the spec asks for (`Deployment` when unset).
    pub workload: Workload,
    /// memcached image (an explicit `""` is kept, for validation to reject).
    pub image: &'a str,
    /// memcached container resources.
    pub resources: Option<&'a ResourceRequirements>,
    /// The memory request in MiB the hook adds when `resources` has neither a memory request
    /// nor a memory limit ([`memory_request_mib`]).
    pub memory_request_mib: Option<i64>,
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
    /// `spec.childMetadata`.
    pub child_metadata: ChildMetadata<'a>,
    /// `spec.discovery`.
    pub discovery: Discovery,
    /// Placement and metadata of the pods.
    pub pod: Pod<'a>,
    /// `spec.warmRestart`, when enabled.
    pub warm_restart: Option<WarmRestart<'a>>,
    /// `spec.extstore`, when enabled with a size.
    pub extstore: Option<Extstore<'a>>,
    /// The zones, each running a full copy of the cache (`spec.zones`).
    pub zones: Option<Zones<'a>>,
    /// memcached's proxy in front of the cache, when enabled (`spec.proxy`).
    pub proxy: Option<Proxy<'a>>,
}

impl<'a> Effective<'a> {
    /// Resolves every default of `spec`, with the built-in images.
    #[must_use]
    pub fn of(spec: &'a MemcachedSpec) -> Self {
        Self::with(spec, ImageDefaults::BUILT_IN)
    }

    /// Resolves every default of `spec`, with `images` for the images it does not name.
    #[must_use]
    pub fn with(spec: &'a MemcachedSpec, images: ImageDefaults<'a>) -> Self {
        let autoscaling = Autoscaling::of(spec.autoscaling.as_ref());
        let memcached = Server::of(spec.memcached.as_ref());
        let resources = spec.resources.as_ref();
        let has_memory = |list: Option<&BTreeMap<String, Quantity>>| {
            list.is_some_and(|l| l.contains_key("memory"))
        };
        let memory_given = resources
            .is_some_and(|r| has_memory(r.requests.as_ref()) || has_memory(r.limits.as_ref()));
        let image = spec.image.as_deref().unwrap_or(images.memcached);
        let extstore = Extstore::of(spec.extstore.as_ref());
        let extstore_mib = extstore.as_ref().map_or(0, Extstore::memory_mib);
        Self {
            replicas: match autoscaling {
                Some(_) => None,
                None => Some(spec.replicas.unwrap_or(DEFAULT_REPLICAS)),
            },
            workload: spec.workload.unwrap_or_default(),
            image,
            resources,
            memory_request_mib: (!memory_given).then(|| {
                memory_request_mib(memcached.max_memory_mb, memcached.max_connections)
                    + extstore_mib
            }),
            memcached,
            high_availability: HighAvailability::of(spec.high_availability.as_ref()),
            monitoring: Monitoring::of(spec.monitoring.as_ref(), images.exporter),
            security: Security::of(spec.security.as_ref(), image),
            autoscaling,
            service: Service::of(spec.service.as_ref()),
            child_metadata: ChildMetadata::of(spec.child_metadata.as_ref()),
            discovery: Discovery::of(spec.discovery.as_ref()),
            pod: Pod::of(spec),
            warm_restart: WarmRestart::of(spec.warm_restart.as_ref(), memcached.max_memory_mb),
            extstore,
            zones: Zones::of(spec.zones.as_ref()),
            proxy: Proxy::of(spec.proxy.as_ref()),
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
        assert_eq!(e.image, "memcached:1.6.45");
        assert_eq!(e.memcached, Server::of(None));
        assert_eq!(e.high_availability, HighAvailability::default());
        assert!(e.monitoring.is_none() && e.autoscaling.is_none());
    }

    #[test]
    fn the_memory_request_is_max_memory_plus_the_measured_overhead() {
        assert_eq!(memory_request_mib(64, 1024), 64 + 8 + 16 + 1);
        assert_eq!(memory_request_mib(1024, 4096), 1024 + 8 + 64 + 16);
        assert_eq!(memory_request_mib(65, 1), 65 + 8 + 1 + 2);
        assert_eq!(memory_request_mib(65536, 65536), 65536 + 8 + 1024 + 1024);
    }

    #[test]
    fn the_memory_request_is_added_only_without_memory_in_resources() {
        let with = |resources: serde_json::Value| MemcachedSpec {
            resources: Some(serde_json::from_value(resources).expect("resources")),
            ..MemcachedSpec::default()
        };
        let request = |spec: &MemcachedSpec| Effective::of(spec).memory_request_mib;
        assert_eq!(request(&MemcachedSpec::default()), Some(89));
        let cpu_only = with(serde_json::json!({"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}));
        assert_eq!(request(&cpu_only), Some(89));
        let memory = with(serde_json::json!({"requests": {"memory": "1Gi"}}));
        assert_eq!(request(&memory), None);
        let limit = with(serde_json::json!({"limits": {"memory": "1Gi"}}));
        assert_eq!(request(&limit), None);
    }

    #[test]
    fn images_the_spec_does_not_name_come_from_the_defaults() {
        let images = ImageDefaults {
            memcached: "mirror.example/memcached:1.6.45",
            exporter: "mirror.example/prom/memcached-exporter:v0.15.4",
        };
        let monitoring = Some(crate::api::MonitoringSpec {
            enabled: Some(true),
            ..crate::api::MonitoringSpec::default()
        });
        let spec = MemcachedSpec {
            monitoring: monitoring.clone(),
            ..MemcachedSpec::default()
        };
        let e = Effective::with(&spec, images);
        assert_eq!(e.image, images.memcached);
        let exporter = e.monitoring.map(|m| m.exporter_image);
        assert_eq!(exporter, Some(images.exporter));
        let named = MemcachedSpec {
            image: Some("memcached:1.6.40".into()),
            monitoring: monitoring.map(|m| crate::api::MonitoringSpec {
                exporter_image: Some("exporter:1".into()),
                ..m
            }),
            ..MemcachedSpec::default()
        };
        let e = Effective::with(&named, images);
        assert_eq!(e.image, "memcached:1.6.40");
        assert_eq!(e.monitoring.map(|m| m.exporter_image), Some("exporter:1"));
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
