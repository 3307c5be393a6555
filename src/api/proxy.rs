//! `spec.proxy`: memcached's own proxy in front of the cache, so that clients talk to one
//! address, read from their own zone and write to every zone (docs/behaviour.md, "Proxy").

use k8s_openapi::api::core::v1::ResourceRequirements;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::check::{self, Out, Violation, Zero, quoted};
use super::security::Security;
use super::zones::Zones;
use super::{MemcachedSpec, Workload};

/// Default proxy pods per zone (or in all without zones): one can restart while the other
/// serves.
pub const DEFAULT_REPLICAS: i32 = 2;
/// Bounds of `replicas`.
pub const REPLICAS: (i32, i32) = (1, 16);

/// The longest Memcached name with the proxy: `<name>-proxy` names its Service.
pub const NAME_LENGTH: usize = 63 - "-proxy".len();

/// The proxy in front of the cache.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxySpec {
    /// Run memcached's proxy in front of the cache, behind the Service `<name>-proxy`, with
    /// its route configuration in the ConfigMap `<name>-proxy`: with `zones`, a proxy
    /// Deployment per zone, reading from its own zone first and from the other zones on a miss
    /// or an error, writing and deleting to every zone; without zones, keys hashed over the
    /// pods by their stable names. Needs `workload: StatefulSet` unless the cache is one pod
    /// without zones; not with `security.sasl`; with `security.tls` only with
    /// `allowPlaintext` (clients reach the proxy by TLS, the proxy the pods in plaintext).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enabled: Option<bool>,

    /// Proxy pods per zone (with `zones`), or in all without zones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = REPLICAS.0, max = REPLICAS.1),
        extend("default" = DEFAULT_REPLICAS)
    )]
    pub replicas: Option<i32>,

    /// Compute resources of the proxy container, copied verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,

    /// With `security.networkPolicy`: whether the cache's pods still admit the allowed sources
    /// on memcached's ports (true), or only the proxy's pods (false), so that every client goes
    /// through the proxy. The metrics port admits the allowed sources either way, and the
    /// proxy's own NetworkPolicy admits them on the proxy's port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub direct_clients: Option<bool>,
}

/// `spec.proxy` with every default applied (present only when enabled).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Proxy<'a> {
    /// Proxy pods per zone, or in all without zones.
    pub replicas: i32,
    /// The proxy container's resources.
    pub resources: Option<&'a ResourceRequirements>,
    /// The cache's pods admit the allowed sources beside the proxy (`directClients`).
    pub direct_clients: bool,
}

impl<'a> Proxy<'a> {
    /// Resolves an enabled `spec.proxy`; `None` when it is off.
    #[must_use]
    pub fn of(spec: Option<&'a ProxySpec>) -> Option<Self> {
        let spec = spec.filter(|p| p.enabled == Some(true))?;
        Some(Self {
            replicas: spec.replicas.unwrap_or(DEFAULT_REPLICAS),
            resources: spec.resources.as_ref(),
            direct_clients: spec.direct_clients != Some(false),
        })
    }
}

/// Why the proxy cannot run beside SASL.
pub const SASL_DETAIL: &str = "spec.proxy.enabled cannot be used with spec.security.sasl.enabled: \
    memcached's proxy authenticates neither its clients nor itself to the cache's pods by a SASL \
    password file (with -Y it refuses to start)";
/// Why the proxy needs the cache's plaintext port beside TLS.
pub const TLS_DETAIL: &str = "spec.proxy.enabled with spec.security.tls needs \
    spec.security.tls.allowPlaintext: true: clients reach the proxy by TLS, but the proxy reaches \
    the cache's pods in plaintext (its TLS toward them is experimental in memcached 1.6.45, TLS \
    1.3 only, checks no certificate, and is not built into the official image)";
/// Why the proxy needs stable pod names.
pub const WORKLOAD_DETAIL: &str = "spec.proxy.enabled needs spec.workload: StatefulSet when the \
    cache has more than one pod or has spec.zones: the proxy hashes keys over (and, with zones, \
    sends each zone's copy to) pods named one by one, and a Deployment's pods have no stable \
    names (only one pod without zones can be reached by the Service's name)";

/// Why a zone cannot be named `proxy` or `proxy-...` beside the proxy.
pub const ZONE_DETAIL: &str = "a zone named proxy or proxy-... cannot be used with \
    spec.proxy.enabled: the zone's workload <name>-<zone> would take the name of a proxy \
    Deployment <name>-proxy-<zone>";

/// Why keeping clients away from the cache's pods needs a NetworkPolicy.
pub const DIRECT_DETAIL: &str = "spec.proxy.directClients: false needs \
    spec.security.networkPolicy.enabled: true: without a NetworkPolicy the cache's pods admit \
    every client";
/// The CEL rule (on the spec) of [`DIRECT_DETAIL`].
pub const DIRECT_RULE: &str = "!has(self.proxy) || !has(self.proxy.enabled) || \
    !self.proxy.enabled || !has(self.proxy.directClients) || self.proxy.directClients || \
    (has(self.security) && has(self.security.networkPolicy) && \
    has(self.security.networkPolicy.enabled) && self.security.networkPolicy.enabled)";
/// The CEL rule (on the spec) of [`SASL_DETAIL`].
pub const SASL_RULE: &str = "!has(self.proxy) || !has(self.proxy.enabled) || !self.proxy.enabled \
    || !has(self.security) || !has(self.security.sasl) || !has(self.security.sasl.enabled) || \
    !self.security.sasl.enabled";
/// The CEL rule (on the spec) of [`TLS_DETAIL`].
pub const TLS_RULE: &str = "!has(self.proxy) || !has(self.proxy.enabled) || !self.proxy.enabled \
    || !has(self.security) || !has(self.security.tls) || !has(self.security.tls.enabled) || \
    !self.security.tls.enabled || (has(self.security.tls.allowPlaintext) && \
    self.security.tls.allowPlaintext)";
/// The CEL rule (on the spec) of [`WORKLOAD_DETAIL`]: a StatefulSet, or one pod without zones
/// and without autoscaling.
pub const WORKLOAD_RULE: &str = "!has(self.proxy) || !has(self.proxy.enabled) || \
    !self.proxy.enabled || (has(self.workload) && self.workload == 'StatefulSet') || \
    ((!has(self.zones) || !has(self.zones.names) || size(self.zones.names) == 0) && \
    (!has(self.autoscaling) || !has(self.autoscaling.enabled) || !self.autoscaling.enabled) && \
    (!has(self.replicas) || self.replicas <= 1))";
/// The CEL rule (on the spec) of [`ZONE_DETAIL`].
pub const ZONE_RULE: &str = "!has(self.proxy) || !has(self.proxy.enabled) || !self.proxy.enabled \
    || !has(self.zones) || !has(self.zones.names) || self.zones.names.all(z, z != 'proxy' && \
    !z.startsWith('proxy-'))";
/// The CEL rule (on the whole object: only there can a rule read `metadata.name`) of the name's
/// length with the proxy, [`NAME_LENGTH`].
#[must_use]
pub fn name_rule() -> String {
    format!(
        "!has(self.spec) || !has(self.spec.proxy) || !has(self.spec.proxy.enabled) || \
         !self.spec.proxy.enabled || size(self.metadata.name) <= {NAME_LENGTH}"
    )
}
/// Why the name is too long with the proxy (the detail the hook and [`name_rule`] give).
#[must_use]
pub fn name_detail() -> String {
    format!(
        "must be at most {NAME_LENGTH} characters with spec.proxy.enabled: the proxy's Service \
         <name>-proxy is a DNS-1035 label of at most 63"
    )
}

/// The field rules of `spec.proxy`.
pub(super) fn validate(out: &mut Out, p: &ProxySpec) {
    let replicas = p.replicas.map(i64::from);
    let bounds = (i64::from(REPLICAS.0), i64::from(REPLICAS.1));
    check::range(out, "spec.proxy.replicas", replicas, bounds, Zero::IsAValue);
    check::resources(out, "spec.proxy.resources", p.resources.as_ref());
}

/// What the proxy's rules read of the effective spec: the security settings, the zones,
/// whether autoscaling is on and the replicas (`None` under autoscaling).
pub(super) type Around<'e, 'a> = (&'e Security<'a>, Option<&'e Zones<'a>>, bool, Option<i32>);

/// The cross-field rules of an `enabled` proxy: not with SASL, TLS only with the plaintext
/// port, and pods with stable names unless the cache is one pod without zones.
pub(super) fn validate_rules(
    out: &mut Out,
    (name, spec): (&str, &MemcachedSpec),
    (security, zones, autoscaling, replicas): Around<'_, '_>,
    enabled: bool,
) {
    if !enabled {
        return;
    }
    if name.len() > NAME_LENGTH {
        out.push(Violation::invalid(
            "metadata.name",
            quoted(name),
            name_detail(),
        ));
    }
    if security.sasl_secret.is_some() {
        out.push(Violation::invalid(
            "spec.proxy.enabled",
            "true",
            SASL_DETAIL,
        ));
    }
    if security.tls.is_some_and(|t| !t.allow_plaintext) {
        out.push(Violation::invalid("spec.proxy.enabled", "true", TLS_DETAIL));
    }
    for (i, zone) in zones.iter().flat_map(|z| &z.names).enumerate() {
        if *zone == "proxy" || zone.starts_with("proxy-") {
            let field = format!("spec.zones.names[{i}]");
            out.push(Violation::invalid(field, quoted(zone), ZONE_DETAIL));
        }
    }
    let direct = spec.proxy.as_ref().and_then(|p| p.direct_clients);
    if direct == Some(false) && security.network_policy.is_none() {
        out.push(Violation::invalid(
            "spec.proxy.directClients",
            "false",
            DIRECT_DETAIL,
        ));
    }
    let one_pod = zones.is_none() && !autoscaling && replicas.unwrap_or(1) <= 1;
    if spec.workload.unwrap_or_default() == Workload::Deployment && !one_pod {
        out.push(Violation::invalid(
            "spec.workload",
            "\"Deployment\"",
            WORKLOAD_DETAIL,
        ));
    }
}
