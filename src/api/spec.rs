//! The `Memcached` spec as stored by the API server: every field of spec.md Part 2 §a.3.
//!
//! Every field is optional on the wire (JSON `null` means unset, spec.md §1.4a) and the
//! schema carries the CRD defaults, bounds, enums and patterns. The hook never relies on the
//! API server having applied them: `api::effective` resolves the defaults again and
//! `api::validation` re-checks the bounds.

use std::collections::BTreeMap;

use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscalerBehavior, MetricSpec};
use k8s_openapi::api::core::v1::{
    PodSecurityContext, ResourceRequirements, SecurityContext, TopologySpreadConstraint,
};
use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::status::MemcachedStatus;

/// Bounds of the free-form strings, lists and maps: in the CRD's schema (so the API server
/// refuses an over-long value) and re-checked by `api::validation` (objects stored before a
/// bound existed). Lengths count characters, as the API server does. docs/behaviour.md gives
/// the reason for each.
pub mod bounds {
    /// An image reference (`image`, `monitoring.exporterImage`).
    pub const IMAGE_LENGTH: usize = 1024;
    /// One entry of `memcached.extraArgs`.
    pub const EXTRA_ARG_LENGTH: usize = 1024;
    /// Entries of `memcached.extraArgs`.
    pub const EXTRA_ARGS: usize = 64;
    /// `memcached.maxItemSize` (the longest useful value, `1048576k`, has 8).
    pub const ITEM_SIZE_LENGTH: usize = 16;
    /// A budget of `highAvailability.podDisruptionBudget` written as a string (`"100%"` has 4).
    pub const BUDGET_LENGTH: usize = 16;
    /// Entries of `highAvailability.topologySpreadConstraints`.
    pub const TOPOLOGY_SPREAD_CONSTRAINTS: usize = 16;
    /// A Prometheus duration (`serviceMonitor.interval`, `serviceMonitor.scrapeTimeout`).
    pub const DURATION_LENGTH: usize = 64;
    /// A Secret name: a DNS-1123 subdomain.
    pub const SECRET_NAME_LENGTH: usize = 253;
    /// Entries of `security.networkPolicy.allowedSources`.
    pub const ALLOWED_SOURCES: usize = 64;
    /// Entries of `autoscaling.metrics`.
    pub const METRICS: usize = 16;
    /// Entries of a label or annotation map (`serviceMonitor.additionalLabels`,
    /// `service.annotations`).
    pub const MAP_ENTRIES: usize = 64;
    /// A label or annotation key: a DNS-1123 subdomain prefix (253), `/`, a name (63).
    pub const KEY_LENGTH: usize = 317;
    /// A label value.
    pub const LABEL_VALUE_LENGTH: usize = 63;
    /// An annotation value.
    pub const ANNOTATION_VALUE_LENGTH: usize = 64 * 1024;
    /// All keys and values of `service.annotations` together, in bytes: half of the 256 KiB
    /// Kubernetes allows for all annotations of an object, because Metacontroller's
    /// last-applied-configuration annotation on the Service repeats them. Checked by the hook
    /// only (a CRD schema cannot sum a map).
    pub const ANNOTATIONS_TOTAL: usize = 128 * 1024;
    /// The CEL rule bounding the keys of a label or annotation map to [`KEY_LENGTH`].
    pub const KEY_RULE: &str = "self.all(k, size(k) <= 317)";
    /// The message of [`KEY_RULE`].
    pub const KEY_MESSAGE: &str = "keys may not be more than 317 characters";
}

/// A Memcached cache: a Deployment of memcached pods behind a headless Service, with optional
/// disruption budget, network policy, monitoring and autoscaling.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "memcached.c5c3.io",
    version = "v1beta1",
    kind = "Memcached",
    plural = "memcacheds",
    singular = "memcached",
    namespaced,
    status = "MemcachedStatus",
    doc = "Memcached is a memcached cache managed by the memcached-hook Metacontroller sync hook.",
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".status.desiredReplicas","description":"Number of desired Memcached pods (spec.replicas, 1 when unset, or the autoscaler's count)"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas","description":"Number of ready Memcached pods"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"Whether all desired Memcached pods are ready"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!(has(self.autoscaling) && has(self.autoscaling.enabled) && self.autoscaling.enabled) || !has(self.replicas)",
        "message": "spec.replicas and spec.autoscaling.enabled are mutually exclusive",
        "fieldPath": ".replicas",
        "reason": "FieldValueForbidden"
    },
    {
        "rule": "!(has(self.autoscaling) && has(self.autoscaling.enabled) && self.autoscaling.enabled) || (has(self.resources) && has(self.resources.requests) && 'cpu' in self.resources.requests) || (has(self.autoscaling.metrics) && size(self.autoscaling.metrics) > 0 && !self.autoscaling.metrics.exists(m, m.type == 'Resource' && has(m.resource) && m.resource.name == 'cpu' && m.resource.target.type == 'Utilization'))",
        "message": "resources.requests.cpu is required when using CPU utilization metrics",
        "fieldPath": ".resources",
        "reason": "FieldValueRequired"
    },
    {
        "rule": "!has(self.resources) || !has(self.resources.limits) || !('memory' in self.resources.limits) || !isQuantity(string(self.resources.limits['memory'])) || quantity(string(self.resources.limits['memory'])).compareTo(quantity('0').add(((has(self.memcached) && has(self.memcached.maxMemoryMB) && self.memcached.maxMemoryMB > 0 ? self.memcached.maxMemoryMB : 64) + 32) * 1048576)) >= 0",
        "message": "memory limit must be at least maxMemoryMB + 32Mi overhead",
        "fieldPath": ".resources.limits",
        "reason": "FieldValueInvalid"
    }
]))]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// Number of memcached pods (0 scales to zero). Defaults to 1 unless autoscaling is enabled;
    /// must not be set when autoscaling is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 64))]
    pub replicas: Option<i32>,

    /// Container image of memcached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = bounds::IMAGE_LENGTH), extend("default" = "memcached:1.6"))]
    pub image: Option<String>,

    /// Compute resources of the memcached container, copied verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,

    /// memcached server settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memcached: Option<MemcachedConfig>,

    /// Anti-affinity, topology spread, disruption budget and graceful shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_availability: Option<HighAvailabilitySpec>,

    /// Prometheus exporter sidecar and ServiceMonitor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring: Option<MonitoringSpec>,

    /// Security contexts, SASL, TLS and NetworkPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<SecuritySpec>,

    /// HorizontalPodAutoscaler settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingSpec>,

    /// Settings of the headless Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceSpec>,
}

/// memcached server settings; each maps to one command-line flag.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedConfig {
    /// Item memory in megabytes (`-m`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "maxMemoryMB"
    )]
    #[schemars(range(min = 16, max = 65536), extend("default" = 64))]
    pub max_memory_mb: Option<i32>,

    /// Maximum simultaneous connections (`-c`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65536), extend("default" = 1024))]
    pub max_connections: Option<i32>,

    /// Worker threads (`-t`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 128), extend("default" = 4))]
    pub threads: Option<i32>,

    /// Maximum item size (`-I`), a number followed by `k` or `m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        regex(pattern = r"^[0-9]+(k|m)$"),
        length(max = bounds::ITEM_SIZE_LENGTH),
        extend("default" = "1m")
    )]
    pub max_item_size: Option<String>,

    /// Log verbosity: 0 none, 1 `-v`, 2 `-vv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2), extend("default" = 0))]
    pub verbosity: Option<i32>,

    /// Extra memcached arguments, appended verbatim after all others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = bounds::EXTRA_ARGS),
        inner(length(max = bounds::EXTRA_ARG_LENGTH))
    )]
    pub extra_args: Option<Vec<String>>,
}

/// Anti-affinity preset.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AntiAffinityPreset {
    /// Preferred anti-affinity on `kubernetes.io/hostname` (weight 100).
    Soft,
    /// Required anti-affinity on `kubernetes.io/hostname`.
    Hard,
}

/// High-availability settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HighAvailabilitySpec {
    /// Pod anti-affinity preset; `soft` whenever `highAvailability` is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "soft"))]
    pub anti_affinity_preset: Option<AntiAffinityPreset>,

    /// Topology spread constraints, copied verbatim to the pod template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = bounds::TOPOLOGY_SPREAD_CONSTRAINTS))]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,

    /// PodDisruptionBudget settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PdbSpec>,

    /// preStop delay and termination grace period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_shutdown: Option<GracefulShutdownSpec>,
}

/// PodDisruptionBudget settings. `minAvailable` wins when both budgets are set; neither set
/// means `minAvailable: 1`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PdbSpec {
    /// Emit a PodDisruptionBudget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Minimum available pods: an integer or a percentage such as `"50%"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = bounds::BUDGET_LENGTH))]
    pub min_available: Option<IntOrString>,
    /// Maximum unavailable pods: an integer or a percentage such as `"25%"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = bounds::BUDGET_LENGTH))]
    pub max_unavailable: Option<IntOrString>,
}

/// Graceful shutdown: a preStop sleep and a pod termination grace period.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.enabled) || !self.enabled || (has(self.terminationGracePeriodSeconds) ? self.terminationGracePeriodSeconds : 30) > (has(self.preStopDelaySeconds) ? self.preStopDelaySeconds : 10)",
    "message": "terminationGracePeriodSeconds must exceed preStopDelaySeconds",
    "fieldPath": ".terminationGracePeriodSeconds",
    "reason": "FieldValueInvalid"
}]))]
#[serde(rename_all = "camelCase")]
pub struct GracefulShutdownSpec {
    /// Turn graceful shutdown on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Seconds the preStop hook sleeps before memcached gets SIGTERM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 300), extend("default" = 10))]
    pub pre_stop_delay_seconds: Option<i32>,
    /// Pod termination grace period; must exceed `preStopDelaySeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 600), extend("default" = 30))]
    pub termination_grace_period_seconds: Option<i64>,
}

/// Monitoring settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringSpec {
    /// Add the Prometheus exporter sidecar and the Service `metrics` port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Exporter image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = bounds::IMAGE_LENGTH),
        extend("default" = "prom/memcached-exporter:v0.15.4")
    )]
    pub exporter_image: Option<String>,
    /// Compute resources of the exporter container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exporter_resources: Option<ResourceRequirements>,
    /// ServiceMonitor settings; its presence (with `enabled`) emits a ServiceMonitor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_monitor: Option<ServiceMonitorSpec>,
}

/// ServiceMonitor settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMonitorSpec {
    /// Extra labels on the ServiceMonitor (the standard labels win on conflicts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "maxProperties" = bounds::MAP_ENTRIES,
        "additionalProperties" = {"type": "string", "maxLength": bounds::LABEL_VALUE_LENGTH},
        "x-kubernetes-validations" = [{"rule": bounds::KEY_RULE, "message": bounds::KEY_MESSAGE}]
    ))]
    pub additional_labels: Option<BTreeMap<String, String>>,
    /// Scrape interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = bounds::DURATION_LENGTH), extend("default" = "30s"))]
    pub interval: Option<String>,
    /// Scrape timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = bounds::DURATION_LENGTH), extend("default" = "10s"))]
    pub scrape_timeout: Option<String>,
}

/// Security settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecuritySpec {
    /// Pod security context, copied verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_security_context: Option<PodSecurityContext>,
    /// Container security context, applied to every container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_security_context: Option<SecurityContext>,
    /// SASL (ASCII authentication file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sasl: Option<SaslSpec>,
    /// TLS and mutual TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSpec>,
    /// NetworkPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<NetworkPolicySpec>,
}

/// Reference to a Secret in the Memcached's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct SecretRef {
    /// Name of the Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = bounds::SECRET_NAME_LENGTH), extend("default" = ""))]
    pub name: Option<String>,
}

/// SASL settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.enabled) || !self.enabled || (has(self.credentialsSecretRef) && has(self.credentialsSecretRef.name) && self.credentialsSecretRef.name != '')",
    "message": "credentialsSecretRef.name is required when SASL is enabled",
    "fieldPath": ".credentialsSecretRef",
    "reason": "FieldValueRequired"
}]))]
#[serde(rename_all = "camelCase")]
pub struct SaslSpec {
    /// Turn SASL (memcached `-Y`) on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Secret with the key `password-file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret_ref: Option<SecretRef>,
}

/// TLS settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.enabled) || !self.enabled || (has(self.certificateSecretRef) && has(self.certificateSecretRef.name) && self.certificateSecretRef.name != '')",
    "message": "certificateSecretRef.name is required when TLS is enabled",
    "fieldPath": ".certificateSecretRef",
    "reason": "FieldValueRequired"
}]))]
#[serde(rename_all = "camelCase")]
pub struct TlsSpec {
    /// Turn TLS on (port 11212).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Secret with the keys `tls.crt`, `tls.key` and (for client certificates) `ca.crt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_secret_ref: Option<SecretRef>,
    /// Require client certificates signed by `ca.crt` (mutual TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_client_cert: Option<bool>,
}

/// NetworkPolicy settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// Emit a NetworkPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Allowed peers; empty or absent allows every source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = bounds::ALLOWED_SOURCES))]
    pub allowed_sources: Option<Vec<NetworkPolicyPeer>>,
}

/// Autoscaling settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.enabled) || !self.enabled || has(self.maxReplicas)",
        "message": "maxReplicas is required when autoscaling is enabled",
        "fieldPath": ".maxReplicas",
        "reason": "FieldValueRequired"
    },
    {
        "rule": "!has(self.enabled) || !self.enabled || !has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
        "message": "minReplicas must not exceed maxReplicas",
        "fieldPath": ".minReplicas",
        "reason": "FieldValueInvalid"
    }
]))]
#[serde(rename_all = "camelCase")]
pub struct AutoscalingSpec {
    /// Emit a HorizontalPodAutoscaler and leave replicas to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Lower bound of replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_replicas: Option<i32>,
    /// Upper bound of replicas (required when enabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_replicas: Option<i32>,
    /// Metrics; defaults to CPU utilisation 80%.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = bounds::METRICS))]
    pub metrics: Option<Vec<MetricSpec>>,
    /// Scaling behaviour; defaults to a 300 s scale-down stabilisation window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<HorizontalPodAutoscalerBehavior>,
}

/// Settings of the headless Service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// Annotations of the Service (replace the whole map; absent when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "maxProperties" = bounds::MAP_ENTRIES,
        "additionalProperties" = {"type": "string", "maxLength": bounds::ANNOTATION_VALUE_LENGTH},
        "x-kubernetes-validations" = [{"rule": bounds::KEY_RULE, "message": bounds::KEY_MESSAGE}]
    ))]
    pub annotations: Option<BTreeMap<String, String>>,
}
