//! Effective settings: the spec with every default of spec.md Part 2 §e.1 and §a.3 applied.
//!
//! This is the only place where defaults live. The hook never relies on the API server having
//! defaulted the stored object (it may predate the CRD, or come from a replayed fixture), and
//! treats `0`/`""` for the memcached settings as "use the default" (spec.md §1.4a).

use std::collections::BTreeMap;

use k8s_openapi::api::autoscaling::v2::{
    HPAScalingRules, HorizontalPodAutoscalerBehavior, MetricSpec, MetricTarget,
    ResourceMetricSource,
};
use k8s_openapi::api::core::v1::{
    PodSecurityContext, ResourceRequirements, SecurityContext, TopologySpreadConstraint,
};
use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{AntiAffinityPreset, MemcachedSpec};

/// Default memcached image.
pub const DEFAULT_IMAGE: &str = "memcached:1.6";
/// Default exporter image.
pub const DEFAULT_EXPORTER_IMAGE: &str = "prom/memcached-exporter:v0.15.4";
/// Default item memory in MB.
pub const DEFAULT_MAX_MEMORY_MB: i32 = 64;
/// Default connection limit.
pub const DEFAULT_MAX_CONNECTIONS: i32 = 1024;
/// Default worker threads.
pub const DEFAULT_THREADS: i32 = 4;
/// Default maximum item size.
pub const DEFAULT_MAX_ITEM_SIZE: &str = "1m";
/// Default preStop sleep in seconds.
pub const DEFAULT_PRE_STOP_DELAY_SECONDS: i32 = 10;
/// Default termination grace period in seconds.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// Default ServiceMonitor scrape interval.
pub const DEFAULT_SCRAPE_INTERVAL: &str = "30s";
/// Default ServiceMonitor scrape timeout.
pub const DEFAULT_SCRAPE_TIMEOUT: &str = "10s";
/// Default replicas when neither `spec.replicas` nor autoscaling is set.
pub const DEFAULT_REPLICAS: i32 = 1;

/// The PodDisruptionBudget's one budget.
#[derive(Clone, Debug, PartialEq)]
pub enum Budget<'a> {
    /// `minAvailable` (also the default, `1`).
    MinAvailable(&'a IntOrString),
    /// `maxUnavailable`, only when `minAvailable` is unset.
    MaxUnavailable(&'a IntOrString),
}

/// Graceful-shutdown timings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GracefulShutdown {
    /// Seconds the preStop hook sleeps.
    pub pre_stop_delay_seconds: i32,
    /// Pod termination grace period.
    pub termination_grace_period_seconds: i64,
}

/// Monitoring, when enabled.
#[derive(Clone, Debug, PartialEq)]
pub struct Monitoring<'a> {
    /// Exporter image.
    pub exporter_image: &'a str,
    /// Exporter resources.
    pub exporter_resources: Option<&'a ResourceRequirements>,
    /// ServiceMonitor, when `serviceMonitor` is present.
    pub service_monitor: Option<ServiceMonitor<'a>>,
}

/// ServiceMonitor settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceMonitor<'a> {
    /// Extra labels.
    pub additional_labels: Option<&'a BTreeMap<String, String>>,
    /// Scrape interval.
    pub interval: &'a str,
    /// Scrape timeout.
    pub scrape_timeout: &'a str,
}

/// TLS, when enabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tls<'a> {
    /// Secret with `tls.crt`, `tls.key` (and `ca.crt`).
    pub secret_name: &'a str,
    /// Require client certificates.
    pub client_cert: bool,
}

/// Autoscaling, when enabled (with the webhook's metric and behaviour defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct Autoscaling {
    /// Lower bound, as set.
    pub min_replicas: Option<i32>,
    /// Upper bound, as set.
    pub max_replicas: Option<i32>,
    /// Metrics (CPU utilisation 80% when empty).
    pub metrics: Vec<MetricSpec>,
    /// Behaviour (scale-down stabilisation 300 s when absent).
    pub behavior: HorizontalPodAutoscalerBehavior,
}

/// A Memcached spec with every default resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Effective<'a> {
    /// Desired replicas; `None` when autoscaling owns the count.
    pub replicas: Option<i32>,
    /// memcached image.
    pub image: &'a str,
    /// memcached container resources.
    pub resources: Option<&'a ResourceRequirements>,
    /// `-m`.
    pub max_memory_mb: i32,
    /// `-c`.
    pub max_connections: i32,
    /// `-t`.
    pub threads: i32,
    /// `-I`.
    pub max_item_size: &'a str,
    /// 0, 1 (`-v`) or 2 (`-vv`).
    pub verbosity: i32,
    /// Appended verbatim.
    pub extra_args: &'a [String],
    /// Anti-affinity preset (`soft` whenever `highAvailability` is present).
    pub anti_affinity: Option<AntiAffinityPreset>,
    /// Topology spread constraints (never an empty list).
    pub topology_spread: Option<&'a [TopologySpreadConstraint]>,
    /// The PDB budget, when the PDB is enabled.
    pub pdb: Option<Budget<'a>>,
    /// Graceful shutdown, when enabled.
    pub graceful_shutdown: Option<GracefulShutdown>,
    /// Monitoring, when enabled.
    pub monitoring: Option<Monitoring<'a>>,
    /// Pod security context.
    pub pod_security_context: Option<&'a PodSecurityContext>,
    /// Container security context (every container).
    pub container_security_context: Option<&'a SecurityContext>,
    /// SASL credentials Secret, when SASL is enabled.
    pub sasl_secret: Option<&'a str>,
    /// TLS, when enabled.
    pub tls: Option<Tls<'a>>,
    /// NetworkPolicy peers when enabled (`Some(&[])` = every source).
    pub network_policy: Option<&'a [NetworkPolicyPeer]>,
    /// Autoscaling, when enabled.
    pub autoscaling: Option<Autoscaling>,
    /// Service annotations (never an empty map).
    pub service_annotations: Option<&'a BTreeMap<String, String>>,
}

static MIN_AVAILABLE_ONE: IntOrString = IntOrString::Int(1);

fn non_zero<T: Default + PartialEq + Copy>(value: Option<T>, default: T) -> T {
    value.filter(|v| *v != T::default()).unwrap_or(default)
}

fn non_empty<'a>(value: Option<&'a str>, default: &'a str) -> &'a str {
    value.filter(|v| !v.is_empty()).unwrap_or(default)
}

/// The webhook's default metric: CPU utilisation 80%.
fn default_metrics() -> Vec<MetricSpec> {
    vec![MetricSpec {
        type_: "Resource".to_owned(),
        resource: Some(ResourceMetricSource {
            name: "cpu".to_owned(),
            target: MetricTarget {
                type_: "Utilization".to_owned(),
                average_utilization: Some(80),
                ..MetricTarget::default()
            },
        }),
        ..MetricSpec::default()
    }]
}

/// The webhook's default behaviour: scale-down stabilisation of 300 s.
fn default_behavior() -> HorizontalPodAutoscalerBehavior {
    HorizontalPodAutoscalerBehavior {
        scale_down: Some(HPAScalingRules {
            stabilization_window_seconds: Some(300),
            ..HPAScalingRules::default()
        }),
        scale_up: None,
    }
}

impl<'a> Effective<'a> {
    /// Resolves every default of `spec`.
    #[must_use]
    pub fn of(spec: &'a MemcachedSpec) -> Self {
        let config = spec.memcached.as_ref();
        let ha = spec.high_availability.as_ref();
        let security = spec.security.as_ref();
        let autoscaling = spec
            .autoscaling
            .as_ref()
            .filter(|a| a.enabled == Some(true))
            .map(|a| Autoscaling {
                min_replicas: a.min_replicas,
                max_replicas: a.max_replicas,
                metrics: a
                    .metrics
                    .clone()
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(default_metrics),
                behavior: a.behavior.clone().unwrap_or_else(default_behavior),
            });
        let pdb = ha
            .and_then(|h| h.pod_disruption_budget.as_ref())
            .filter(|p| p.enabled == Some(true))
            .map(|p| match (&p.min_available, &p.max_unavailable) {
                (Some(min), _) => Budget::MinAvailable(min),
                (None, Some(max)) => Budget::MaxUnavailable(max),
                (None, None) => Budget::MinAvailable(&MIN_AVAILABLE_ONE),
            });
        let graceful_shutdown = ha
            .and_then(|h| h.graceful_shutdown.as_ref())
            .filter(|g| g.enabled == Some(true))
            .map(|g| GracefulShutdown {
                pre_stop_delay_seconds: non_zero(
                    g.pre_stop_delay_seconds,
                    DEFAULT_PRE_STOP_DELAY_SECONDS,
                ),
                termination_grace_period_seconds: non_zero(
                    g.termination_grace_period_seconds,
                    DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
                ),
            });
        let monitoring = spec
            .monitoring
            .as_ref()
            .filter(|m| m.enabled == Some(true))
            .map(|m| Monitoring {
                exporter_image: m
                    .exporter_image
                    .as_deref()
                    .unwrap_or(DEFAULT_EXPORTER_IMAGE),
                exporter_resources: m.exporter_resources.as_ref(),
                service_monitor: m.service_monitor.as_ref().map(|s| ServiceMonitor {
                    additional_labels: s.additional_labels.as_ref().filter(|l| !l.is_empty()),
                    interval: non_empty(s.interval.as_deref(), DEFAULT_SCRAPE_INTERVAL),
                    scrape_timeout: non_empty(s.scrape_timeout.as_deref(), DEFAULT_SCRAPE_TIMEOUT),
                }),
            });
        Self {
            replicas: if autoscaling.is_some() {
                None
            } else {
                Some(spec.replicas.unwrap_or(DEFAULT_REPLICAS))
            },
            image: spec.image.as_deref().unwrap_or(DEFAULT_IMAGE),
            resources: spec.resources.as_ref(),
            max_memory_mb: non_zero(config.and_then(|c| c.max_memory_mb), DEFAULT_MAX_MEMORY_MB),
            max_connections: non_zero(
                config.and_then(|c| c.max_connections),
                DEFAULT_MAX_CONNECTIONS,
            ),
            threads: non_zero(config.and_then(|c| c.threads), DEFAULT_THREADS),
            max_item_size: non_empty(
                config.and_then(|c| c.max_item_size.as_deref()),
                DEFAULT_MAX_ITEM_SIZE,
            ),
            verbosity: config.and_then(|c| c.verbosity).unwrap_or(0),
            extra_args: config.and_then(|c| c.extra_args.as_deref()).unwrap_or(&[]),
            anti_affinity: ha.map(|h| h.anti_affinity_preset.unwrap_or(AntiAffinityPreset::Soft)),
            topology_spread: ha
                .and_then(|h| h.topology_spread_constraints.as_deref())
                .filter(|t| !t.is_empty()),
            pdb,
            graceful_shutdown,
            monitoring,
            pod_security_context: security.and_then(|s| s.pod_security_context.as_ref()),
            container_security_context: security
                .and_then(|s| s.container_security_context.as_ref()),
            sasl_secret: security
                .and_then(|s| s.sasl.as_ref())
                .filter(|s| s.enabled == Some(true))
                .map(|s| {
                    s.credentials_secret_ref
                        .as_ref()
                        .and_then(|r| r.name.as_deref())
                        .unwrap_or("")
                }),
            tls: security
                .and_then(|s| s.tls.as_ref())
                .filter(|t| t.enabled == Some(true))
                .map(|t| Tls {
                    secret_name: t
                        .certificate_secret_ref
                        .as_ref()
                        .and_then(|r| r.name.as_deref())
                        .unwrap_or(""),
                    client_cert: t.enable_client_cert == Some(true),
                }),
            network_policy: security
                .and_then(|s| s.network_policy.as_ref())
                .filter(|n| n.enabled == Some(true))
                .map(|n| n.allowed_sources.as_deref().unwrap_or(&[])),
            autoscaling,
            service_annotations: spec
                .service
                .as_ref()
                .and_then(|s| s.annotations.as_ref())
                .filter(|a| !a.is_empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{HighAvailabilitySpec, MemcachedConfig, PdbSpec};

    #[test]
    fn empty_spec_gets_the_webhook_defaults() {
        let spec = MemcachedSpec::default();
        let e = Effective::of(&spec);
        assert_eq!(e.replicas, Some(1));
        assert_eq!(e.image, "memcached:1.6");
        assert_eq!(
            (
                e.max_memory_mb,
                e.max_connections,
                e.threads,
                e.max_item_size
            ),
            (64, 1024, 4, "1m")
        );
        assert_eq!(e.verbosity, 0);
        assert!(e.anti_affinity.is_none() && e.pdb.is_none() && e.monitoring.is_none());
    }

    #[test]
    fn zero_and_empty_memcached_settings_mean_default() {
        let spec = MemcachedSpec {
            memcached: Some(MemcachedConfig {
                max_memory_mb: Some(0),
                max_connections: Some(0),
                threads: Some(0),
                max_item_size: Some(String::new()),
                ..MemcachedConfig::default()
            }),
            ..MemcachedSpec::default()
        };
        let e = Effective::of(&spec);
        assert_eq!(
            (
                e.max_memory_mb,
                e.max_connections,
                e.threads,
                e.max_item_size
            ),
            (64, 1024, 4, "1m")
        );
    }

    #[test]
    fn explicit_empty_image_is_kept_for_validation_to_reject() {
        let spec = MemcachedSpec {
            image: Some(String::new()),
            ..MemcachedSpec::default()
        };
        assert_eq!(Effective::of(&spec).image, "");
    }

    #[test]
    fn any_high_availability_block_means_soft_anti_affinity() {
        let spec = MemcachedSpec {
            high_availability: Some(HighAvailabilitySpec::default()),
            ..MemcachedSpec::default()
        };
        assert_eq!(
            Effective::of(&spec).anti_affinity,
            Some(AntiAffinityPreset::Soft)
        );
    }

    #[test]
    fn pdb_budget_precedence_and_default() {
        let pdb = |min, max| MemcachedSpec {
            high_availability: Some(HighAvailabilitySpec {
                pod_disruption_budget: Some(PdbSpec {
                    enabled: Some(true),
                    min_available: min,
                    max_unavailable: max,
                }),
                ..HighAvailabilitySpec::default()
            }),
            ..MemcachedSpec::default()
        };
        let both = pdb(Some(IntOrString::Int(2)), Some(IntOrString::Int(1)));
        assert_eq!(
            Effective::of(&both).pdb,
            Some(Budget::MinAvailable(&IntOrString::Int(2)))
        );
        let max = pdb(None, Some(IntOrString::String("25%".into())));
        assert_eq!(
            Effective::of(&max).pdb,
            Some(Budget::MaxUnavailable(&IntOrString::String("25%".into())))
        );
        let neither = pdb(None, None);
        assert_eq!(
            Effective::of(&neither).pdb,
            Some(Budget::MinAvailable(&IntOrString::Int(1)))
        );
    }
}
