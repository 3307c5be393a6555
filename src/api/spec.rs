//! The `Memcached` spec as stored by the API server: its top-level fields (`replicas`, `image`,
//! `resources`) here, each block in its own module.
//!
//! Every field is optional on the wire (JSON `null` means unset) and the schema carries the CRD
//! defaults, bounds, enums and patterns. The hook never relies on the API server having
//! applied them: `api::effective` resolves the defaults again and `api::validation` re-checks
//! the bounds, both from the same constants as the schema.

use super::bounded::Bounded;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, LocalObjectReference, ResourceRequirements, Toleration,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::apiserver::{STATEFULSET_NAME_LENGTH, is_dns1035_label};
use super::autoscaling::{self, AutoscalingSpec};
use super::bounds;
use super::check::{self, Out, Violation, Zero, quoted};
use super::child_metadata::ChildMetadataSpec;
use super::discovery::DiscoverySpec;
use super::extstore::{self, ExtstoreSpec};
use super::high_availability::HighAvailabilitySpec;
use super::memcached::{self, MemcachedConfig};
use super::monitoring::MonitoringSpec;
use super::pod;
use super::proxy::{self, ProxySpec};
use super::quantity::Quantity;
use super::security::SecuritySpec;
use super::service::ServiceSpec;
use super::status::MemcachedStatus;
use super::warm_restart::{self, WarmRestartSpec};
use super::zones::ZonesSpec;

/// Bounds of `replicas`.
pub const REPLICAS: (i32, i32) = (0, 64);
/// Default replicas when neither `spec.replicas` nor autoscaling is set.
pub const DEFAULT_REPLICAS: i32 = 1;
/// Default memcached image: an exact release, so that what runs changes with an upgrade of the
/// hook and not with a re-pull of a floating tag.
pub const DEFAULT_IMAGE: &str = "memcached:1.6.45";
/// Memory the memory limit must leave above `maxMemoryMB`, in MiB (connections, threads,
/// hash table).
pub const MEMORY_OVERHEAD_MB: i32 = 32;
/// The message of [`memory_limit_rule`].
pub const MEMORY_LIMIT_MESSAGE: &str = "memory limit must be at least maxMemoryMB + 32Mi overhead";

/// The CEL rule: the memory limit holds `maxMemoryMB` (or its default) plus the overhead.
#[must_use]
pub fn memory_limit_rule() -> String {
    let limit = "self.resources.limits['memory']";
    let default_mb = memcached::DEFAULT_MAX_MEMORY_MB;
    format!(
        "!has(self.resources) || !has(self.resources.limits) || !('memory' in \
         self.resources.limits) || !isQuantity(string({limit})) || \
         quantity(string({limit})).compareTo(quantity('0').add(((has(self.memcached) && \
         has(self.memcached.maxMemoryMB) && self.memcached.maxMemoryMB > 0 ? \
         self.memcached.maxMemoryMB : {default_mb}) + {MEMORY_OVERHEAD_MB}) * {MIB})) >= 0"
    )
}

const MIB: u32 = 1 << 20;

/// A Memcached cache: memcached pods (a Deployment or a StatefulSet) behind a headless Service,
/// with optional disruption budget, network policy, monitoring and autoscaling.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "memcached.c5c3.io",
    version = "v1beta1",
    kind = "Memcached",
    plural = "memcacheds",
    singular = "memcached",
    namespaced,
    status = "MemcachedStatus",
    // `kubectl scale` and HorizontalPodAutoscalers: the scale's replicas are `spec.replicas`
    // (per zone with `spec.zones`), `status.replicas` and `status.selector` (docs/behaviour.md).
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    doc = "Memcached is a memcached cache managed by the memcached-hook Metacontroller sync hook.",
    printcolumn = r#"{"name":"Pods","type":"integer","jsonPath":".status.desiredReplicas","description":"Memcached pods wanted over all zones: spec.replicas (1 when unset, or the autoscaler's count), times the zones with spec.zones"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas","description":"Ready Memcached pods over all zones"}"#,
    printcolumn = r#"{"name":"Zones","type":"string","jsonPath":".status.zonesReady","description":"With spec.zones: zones whose pods are all ready, over all zones","priority":1}"#,
    printcolumn = r#"{"name":"Proxy","type":"string","jsonPath":".status.proxy.ready","description":"With spec.proxy: ready proxy pods over the proxy pods wanted, over all zones","priority":1}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"Whether all desired Memcached pods are ready"}"#,
    printcolumn = r#"{"name":"UpToDate","type":"string","jsonPath":".status.conditions[?(@.type==\"UpToDate\")].status","description":"Whether the pods run this hook's current rendering of their template (False: kept until the next spec change or requested rollout)","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": autoscaling::REPLICAS_RULE,
        "message": autoscaling::REPLICAS_MESSAGE,
        "fieldPath": ".replicas",
        "reason": "FieldValueForbidden"
    },
    {
        "rule": autoscaling::CPU_REQUEST_RULE,
        "message": autoscaling::CPU_REQUEST_MESSAGE,
        "fieldPath": ".resources",
        "reason": "FieldValueRequired"
    },
    {
        "rule": warm_restart::WORKLOAD_RULE,
        "message": warm_restart::WORKLOAD_MESSAGE,
        "fieldPath": ".warmRestart.enabled",
        "reason": "FieldValueForbidden"
    },
    {
        "rule": extstore::WARM_RESTART_RULE,
        "message": extstore::WARM_RESTART_DETAIL,
        "fieldPath": ".extstore.enabled",
        "reason": "FieldValueForbidden"
    },
    {
        "rule": memory_limit_rule(),
        "message": MEMORY_LIMIT_MESSAGE,
        "fieldPath": ".resources.limits",
        "reason": "FieldValueInvalid"
    },
    {
        "rule": proxy::SASL_RULE,
        "message": proxy::SASL_DETAIL,
        "fieldPath": ".proxy.enabled",
        "reason": "FieldValueForbidden"
    },
    {
        "rule": proxy::TLS_RULE,
        "message": proxy::TLS_DETAIL,
        "fieldPath": ".proxy.enabled",
        "reason": "FieldValueForbidden"
    },
    {
        "rule": proxy::WORKLOAD_RULE,
        "message": proxy::WORKLOAD_DETAIL,
        "fieldPath": ".workload",
        "reason": "FieldValueForbidden"
    },
    {
        "rule": proxy::ZONE_RULE,
        "message": proxy::ZONE_DETAIL,
        "fieldPath": ".zones.names",
        "reason": "FieldValueInvalid"
    },
    {
        "rule": proxy::DIRECT_RULE,
        "message": proxy::DIRECT_DETAIL,
        "fieldPath": ".proxy.directClients",
        "reason": "FieldValueInvalid"
    }
]))]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// Number of memcached pods (0 scales to zero). Defaults to 1 unless autoscaling is enabled;
    /// must not be set when autoscaling is enabled. With `zones`, the number of pods **per
    /// zone**: each zone runs a full copy of the cache, and the PODS column
    /// (`status.desiredReplicas`) counts every zone's pods. The scale subresource's count, per
    /// zone too: `kubectl scale` and an autoscaler that targets the Memcached set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = REPLICAS.0, max = REPLICAS.1))]
    pub replicas: Option<i32>,

    /// Container image of memcached. Absent: the hook's default image (its `--default-image`,
    /// `memcached:1.6.45` unless the install sets a mirror).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = bounds::IMAGE_LENGTH))]
    pub image: Option<String>,

    /// Compute resources of the memcached container, copied verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,

    /// memcached server settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub memcached: Option<MemcachedConfig>,

    /// Anti-affinity, topology spread, disruption budget and graceful shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_availability: Option<HighAvailabilitySpec>,

    /// Prometheus exporter sidecar and ServiceMonitor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub monitoring: Option<MonitoringSpec>,

    /// Security contexts, SASL, TLS and NetworkPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub security: Option<SecuritySpec>,

    /// HorizontalPodAutoscaler settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingSpec>,

    /// Settings of the headless Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub service: Option<ServiceSpec>,

    /// Labels and annotations on every object the hook creates for this Memcached (not its
    /// pods: `podLabels` and `podAnnotations` are theirs). A change relabels the objects in
    /// place and restarts no pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_metadata: Option<ChildMetadataSpec>,

    /// Server discovery for clients besides `status`: the server-list ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery: Option<DiscoverySpec>,

    /// Node labels a node must have to run the pods (the pod's `nodeSelector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "bounds::labels_schema")]
    pub node_selector: Option<BTreeMap<String, String>>,

    /// Taints the pods tolerate, copied verbatim to the pod template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = pod::TOLERATIONS))]
    pub tolerations: Option<Bounded<Toleration, { pod::TOLERATIONS }>>,

    /// Node affinity, pod affinity and pod anti-affinity, copied to the pod template (at most
    /// 16 terms per list). A `podAntiAffinity` here replaces the one of
    /// `highAvailability.antiAffinityPreset`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pod::affinity_schema")]
    pub affinity: Option<Affinity>,

    /// PriorityClass of the pods (it must exist in the cluster when the pods are created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = bounds::SECRET_NAME_LENGTH),
        regex(pattern = pod::DNS_SUBDOMAIN_PATTERN)
    )]
    pub priority_class_name: Option<String>,

    /// Secrets with registry credentials to pull the images (memcached and the exporter);
    /// each name a DNS subdomain of at most 253 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pod::image_pull_secrets_schema")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,

    /// Extra labels of the pods; the labels the hook writes (`app.kubernetes.io/name`,
    /// `instance`, `managed-by`, `version`) cannot be set here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pod::own_labels_schema")]
    pub pod_labels: Option<BTreeMap<String, String>>,

    /// Extra annotations of the pods; keys under `memcached.c5c3.io/` belong to the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pod::own_annotations_schema")]
    pub pod_annotations: Option<BTreeMap<String, String>>,

    /// The workload that runs the pods. `Deployment` (the default): pods with random names
    /// behind the headless Service; `status.serverList` is the Service name. `StatefulSet`:
    /// pods named `<name>-0` to `<name>-<replicas-1>`, each reachable as
    /// `<name>-<i>.<name>.<namespace>.svc`, listed one by one in `status.serverList` for clients
    /// that shard keys over a server list. Changing it on a running cache keeps the old workload
    /// serving until the new one has all its replicas ready (condition `Progressing`, reason
    /// `WorkloadMigration`). `StatefulSet` needs a CompositeController that declares `apps/v1`
    /// `statefulsets`; without it the Deployment stays (condition `ChildResourcesMissing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Deployment"))]
    pub workload: Option<Workload>,

    /// Keep the cache across restarts of the pods (`workload: StatefulSet` only): each pod
    /// gets a volume holding memcached's item memory, and a rollout restores the items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_restart: Option<WarmRestartSpec>,

    /// memcached's external storage: the values of cold items on a file of each pod's own
    /// volume (an ephemeral volume claim or an `emptyDir`), keys and item headers in memory.
    /// Holds many more items than `maxMemoryMB` for the price of a disk read on their hits.
    /// Not with `warmRestart`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extstore: Option<ExtstoreSpec>,

    /// Run one full copy of the cache in each of these zones: a workload `<name>-<zone>` of
    /// `replicas` pods per zone, pinned to its zone by a required node affinity, and with
    /// `highAvailability.podDisruptionBudget` one budget per zone that lets only one zone be
    /// disrupted at a time (condition `ZoneDisruption`). Not with autoscaling or warmRestart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones: Option<ZonesSpec>,

    /// memcached's own proxy in front of the cache, behind the Service `<name>-proxy`: one
    /// address for clients that need no server list, reads from the local zone first and
    /// writes to every zone with `zones`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxySpec>,
}

/// The workload kind that runs the memcached pods.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Workload {
    /// An `apps/v1` Deployment (pods with random names).
    #[default]
    Deployment,
    /// An `apps/v1` StatefulSet (stable pod names; a volume per pod with `warmRestart`).
    StatefulSet,
}

/// The detail of a name that cannot name the Service.
const NAME_DETAIL: &str = "must be a DNS-1035 label to name the Service: at most 63 \
    characters, lower-case letters, digits and '-', starting with a letter and ending with a \
    letter or digit";

/// The detail of a name too long for a StatefulSet.
const STATEFULSET_NAME_DETAIL: &str = "must be at most 52 characters with workload StatefulSet: \
    the StatefulSet controller labels each pod controller-revision-hash=<name>-<10 characters>, \
    and a label value has at most 63 (no pod would ever be created)";

/// The rules of the parent's name and of the top-level fields.
pub(super) fn validate(out: &mut Out, name: &str, spec: &MemcachedSpec) {
    if !is_dns1035_label(name) {
        out.push(Violation::invalid(
            "metadata.name",
            quoted(name),
            NAME_DETAIL,
        ));
    } else if spec.workload == Some(Workload::StatefulSet) && name.len() > STATEFULSET_NAME_LENGTH {
        out.push(Violation::invalid(
            "metadata.name",
            quoted(name),
            STATEFULSET_NAME_DETAIL,
        ));
    }
    let replicas = spec.replicas.map(i64::from);
    let bounds = (i64::from(REPLICAS.0), i64::from(REPLICAS.1));
    check::range(out, "spec.replicas", replicas, bounds, Zero::IsAValue);
    let image = spec.image.as_deref();
    if image == Some("") {
        out.push(Violation::required("spec.image", "image must not be empty"));
    }
    check::image(out, "spec.image", image);
    check::resources(out, "spec.resources", spec.resources.as_ref());
}

/// The memory-limit rule ([`memory_limit_rule`]): the limit holds the item memory, at
/// `max_memory_mb` as resolved, plus [`MEMORY_OVERHEAD_MB`].
pub(super) fn validate_rules(out: &mut Out, spec: &MemcachedSpec, max_memory_mb: i32) {
    let limits = spec.resources.as_ref().and_then(|r| r.limits.as_ref());
    let Some(limit) = limits.and_then(|l| l.get("memory")) else {
        return;
    };
    let Ok(q) = Quantity::parse(&limit.0) else {
        return;
    };
    let mb = u128::try_from(max_memory_mb).unwrap_or(0);
    let required = (mb + u128::from(MEMORY_OVERHEAD_MB.unsigned_abs())) * u128::from(MIB);
    if q.is_negative() || q.ceil().is_some_and(|bytes| bytes < required) {
        let shown = q.canonical().unwrap_or_else(|_| limit.0.clone());
        let need = Quantity::from_bytes(required)
            .canonical()
            .unwrap_or_default();
        let detail = format!(
            "memory limit must be at least {need} (maxMemoryMB={max_memory_mb}Mi + \
             {MEMORY_OVERHEAD_MB}Mi overhead)"
        );
        out.push(Violation::invalid(
            "spec.resources.limits.memory",
            quoted(&shown),
            detail,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_rule_says_the_default_and_the_overhead() {
        let rule = memory_limit_rule();
        assert!(rule.ends_with("self.memcached.maxMemoryMB : 64) + 32) * 1048576)) >= 0"));
        assert!(MEMORY_LIMIT_MESSAGE.contains(&format!("{MEMORY_OVERHEAD_MB}Mi")));
    }
}
