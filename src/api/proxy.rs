//! `spec.proxy`: memcached's own proxy in front of the cache, so that clients talk to one
//! address, read from their own zone and write to every zone (docs/behaviour.md, "Proxy").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::check::{Out, Violation};
use super::effective::Effective;
use super::{MemcachedSpec, Workload};

/// The proxy in front of the cache.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxySpec {
    /// Write the route configuration of memcached's proxy into the ConfigMap `<name>-proxy`
    /// (key `routes.lua`): with `zones`, reads from the proxy's own zone first and from the
    /// other zones on a miss or an error, writes and deletes to every zone; without zones, keys
    /// hashed over the pods by their stable names. Needs `workload: StatefulSet` unless the
    /// cache is one pod without zones; not with `security.sasl`; with `security.tls` only with
    /// `allowPlaintext`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enabled: Option<bool>,
}

/// `spec.proxy` as enabled (present only when enabled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proxy;

impl Proxy {
    /// Resolves `spec.proxy`; `None` when it is off.
    #[must_use]
    pub fn of(spec: Option<&ProxySpec>) -> Option<Self> {
        spec.filter(|p| p.enabled == Some(true)).map(|_| Self)
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

/// The cross-field rules of an enabled proxy: not with SASL, TLS only with the plaintext port,
/// and pods with stable names unless the cache is one pod without zones.
pub(super) fn validate_rules(out: &mut Out, spec: &MemcachedSpec, e: &Effective<'_>) {
    if e.proxy.is_none() {
        return;
    }
    if e.security.sasl_secret.is_some() {
        out.push(Violation::invalid(
            "spec.proxy.enabled",
            "true",
            SASL_DETAIL,
        ));
    }
    if e.security.tls.is_some_and(|t| !t.allow_plaintext) {
        out.push(Violation::invalid("spec.proxy.enabled", "true", TLS_DETAIL));
    }
    let one_pod = e.zones.is_none() && e.autoscaling.is_none() && e.replicas.unwrap_or(1) <= 1;
    if spec.workload.unwrap_or_default() == Workload::Deployment && !one_pod {
        out.push(Violation::invalid(
            "spec.workload",
            "\"Deployment\"",
            WORKLOAD_DETAIL,
        ));
    }
}
