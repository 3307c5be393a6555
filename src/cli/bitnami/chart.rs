//! The Bitnami chart's defaults: the values a file may repeat without having chosen them.

use serde_json::Value;

/// The chart's defaults that are not empty, for the values the Memcached does not carry: a
/// file that repeats them (many start as a copy of the chart's values.yaml) reports nothing.
pub(super) const CHART_DEFAULTS: &[(&str, &str)] = &[
    ("clusterDomain", "cluster.local"),
    ("image.registry", "docker.io"),
    ("image.repository", "bitnami/memcached"),
    ("image.pullPolicy", "IfNotPresent"),
    ("architecture", "standalone"),
    ("containerPorts.memcached", "11211"),
    ("podSecurityContext.enabled", "true"),
    ("podSecurityContext.fsGroup", "1001"),
    ("containerSecurityContext.enabled", "true"),
    ("containerSecurityContext.runAsUser", "1001"),
    ("containerSecurityContext.runAsNonRoot", "true"),
    ("podAntiAffinityPreset", "soft"),
    ("podManagementPolicy", "Parallel"),
    ("updateStrategy.type", "RollingUpdate"),
    ("service.type", "ClusterIP"),
    ("service.ports.memcached", "11211"),
    ("service.sessionAffinity", "None"),
    ("service.externalTrafficPolicy", "Cluster"),
    ("persistence.size", "8Gi"),
    ("persistence.accessModes", "[\"ReadWriteOnce\"]"),
    ("serviceAccount.automountServiceAccountToken", "true"),
    ("metrics.image.registry", "docker.io"),
    ("metrics.image.repository", "bitnami/memcached-exporter"),
    ("metrics.image.pullPolicy", "IfNotPresent"),
    ("metrics.containerPorts.metrics", "9150"),
    ("metrics.service.ports.metrics", "9150"),
    ("metrics.service.sessionAffinity", "None"),
    ("metrics.containerSecurityContext.enabled", "true"),
    ("metrics.containerSecurityContext.runAsUser", "1001"),
    ("metrics.containerSecurityContext.runAsNonRoot", "true"),
    ("autoscaling.minReplicas", "3"),
    ("autoscaling.maxReplicas", "6"),
    ("autoscaling.targetCPU", "50"),
    ("autoscaling.targetMemory", "50"),
    ("pdb.maxUnavailable", "1"),
    ("diagnosticMode.command", "[\"sleep\"]"),
    ("diagnosticMode.args", "[\"infinity\"]"),
];

/// The chart's default requests: what its pods asked for when the file sets no `resources`.
pub(super) const CHART_REQUESTS: (&str, &str) = ("250m", "256Mi");

/// Empty, false, or the chart's own default: nothing a user chose.
pub(super) fn is_default(path: &str, v: &Value) -> bool {
    let empty = match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    };
    empty
        || CHART_DEFAULTS.iter().any(|(p, d)| {
            *p == path
                && (serde_json::from_str::<Value>(d).is_ok_and(|d| d == *v)
                    || v.as_str() == Some(d)
                    || v.as_i64().is_some_and(|n| d.parse() == Ok(n)))
        })
}
