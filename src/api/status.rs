//! The `Memcached` status as the hook writes it and reads it back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Observed state of a Memcached, written by the hook through Metacontroller.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct MemcachedStatus {
    /// Available, Progressing, Degraded, Ready, DisruptionBudgetBlocking, ChildResourcesMissing,
    /// SecretReload, WarmRestart, UpToDate, ZoneDisruption, ProxyReady; condition types written by
    /// others are kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        with = "Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>>",
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"])
    )]
    pub conditions: Option<Vec<Condition>>,
    /// Ready pods of the workload (Deployment or StatefulSet); with `zones`, of every zone's
    /// workload together. Shown as the READY column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// The pod count the hook wants: `spec.replicas` (1 when unset), or under autoscaling the
    /// observed workload's count (the HPA's choice); with `zones`, over all zones (`spec.replicas`
    /// per zone times the zones), while `replicas` and `kubectl scale` count per zone. Shown as
    /// the PODS column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired_replicas: Option<i32>,
    /// The pods the workload has now, in the unit of `spec.replicas`: with `zones`, per zone
    /// (the zones' pods divided by the zone count, rounded down). The scale subresource's
    /// current count (`kubectl scale`, HorizontalPodAutoscaler).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The label selector of this Memcached's memcached pods, as a string
    /// (`app.kubernetes.io/instance=<name>,...`): the pods a HorizontalPodAutoscaler that
    /// targets the Memcached averages its metrics over. Absent with `zones` or `autoscaling`,
    /// where such an autoscaler would count wrong or fight the hook's own (docs/behaviour.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The `metadata.generation` this status describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Deployment mode: `<name>.<namespace>:11211` while the cache is Ready. StatefulSet mode:
    /// `<name>-<i>.<name>.<namespace>.svc:11211` for every desired pod in ordinal order, as
    /// soon as the StatefulSet exists (a restarting pod keeps its entry). During a switch
    /// between the two: what the old mode publishes, until the switch completes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub server_list: Option<Vec<String>>,
    /// The DNS SRV name of the port in `serverList`, `_memcached._tcp.<name>.<namespace>.svc`
    /// (`_memcached-tls._tcp...` with TLS and `allowPlaintext`): one target per ready pod, and
    /// per not-ready pod too with `spec.service.publishNotReadyAddresses`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srv_name: Option<String>,
    /// With TLS on: the host names a client that verifies the server certificate checks, which
    /// the certificate must cover: `*.<name>.<namespace>.svc` in StatefulSet mode (one per pod
    /// in `serverList`), `<name>.<namespace>` and `<name>.<namespace>.svc` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub tls_server_names: Option<Vec<String>>,
    /// With `spec.zones`: each zone's pods, in the order of `spec.zones.names`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub zones: Option<Vec<ZoneStatus>>,
    /// With `spec.zones`: the zones whose pods are all ready, over all zones (`2/3`). Shown as
    /// the ZONES column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones_ready: Option<String>,
    /// With `spec.proxy`: where clients reach memcached's proxy, and its ready pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyStatus>,
}

/// memcached's proxy in front of a Memcached with `spec.proxy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ProxyStatus {
    /// The proxy's Service as clients in any namespace reach it: `<name>-proxy.<namespace>:11211`.
    pub address: String,
    /// Ready proxy pods, over all zones (from the observed proxy Deployments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Proxy pods wanted, over all zones: `spec.proxy.replicas`, times the zones with
    /// `spec.zones`.
    pub desired_replicas: i32,
    /// `<ready>/<desired>`. Shown as the PROXY column.
    pub ready: String,
    /// With `spec.zones`: each zone's ready proxy pods (each wants `spec.proxy.replicas`), in
    /// the order of `spec.zones.names`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub zones: Option<Vec<ProxyZoneStatus>>,
}

/// The proxy pods of one zone.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ProxyZoneStatus {
    /// The zone.
    pub name: String,
    /// Ready proxy pods of the zone's proxy Deployment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
}

/// One zone of a Memcached with `spec.zones`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ZoneStatus {
    /// The zone.
    pub name: String,
    /// Ready pods of the zone's workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// StatefulSet mode: the zone's pods, `<name>-<zone>-<i>.<name>.<namespace>.svc:11211`, in
    /// ordinal order, once its StatefulSet exists (Deployment pods have no stable names).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub server_list: Option<Vec<String>>,
    /// With a disruption budget: whether the zone's budget allows voluntary disruptions now
    /// (at most one zone holds it while any zone is short of ready pods).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disruption_allowed: Option<bool>,
    /// With a disruption budget, while the zone is short of ready pods (or its budget has let
    /// pods go): since when a sync has seen it so (RFC 3339). Once it is short for longer than
    /// `spec.zones.outageTimeoutSeconds` it no longer blocks the other zones' budgets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_since: Option<String>,
}

/// A `metav1.Condition`. `lastTransitionTime` is kept as the RFC 3339 text it was read as, so
/// that a carried-over time is written back byte for byte.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    /// Condition type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// CamelCase reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// When `status` last changed.
    pub last_transition_time: String,
    /// The generation this condition describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
