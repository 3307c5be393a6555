//! The Bitnami chart's generations: the defaults of each (values a file may repeat without
//! having chosen them), its resource presets, and the names and labels of a release's objects.

use anyhow::bail;
use serde_json::{Value, json};

/// A major version of the chart: its defaults changed with each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// 6.x: requests of 250m and 256Mi, no NetworkPolicy, no budget.
    Six,
    /// 7.x: hardened contexts, `resourcesPreset: nano`, a NetworkPolicy and a ServiceAccount.
    Seven,
    /// 8.x: as 7.x, with a budget by default (`pdb.create: true`).
    Eight,
}

impl Generation {
    /// The generation of a chart version as `helm list` shows it (`memcached-7.4.1`, `7.4.1`, `7`).
    ///
    /// # Errors
    /// A version that is not one of the generations known here.
    pub fn parse(version: &str) -> anyhow::Result<Self> {
        let v = version.trim();
        let v = v.strip_prefix("memcached-").unwrap_or(v);
        let v = v.strip_prefix('v').unwrap_or(v);
        let major = v.split('.').next().unwrap_or_default();
        Ok(match major {
            "6" => Self::Six,
            "7" => Self::Seven,
            "8" => Self::Eight,
            _ => bail!(
                "--chart-version {version:?}: the chart generations known are 6.x, 7.x and 8.x \
                 (the CHART column of `helm list`, e.g. memcached-7.4.1)"
            ),
        })
    }

    /// The chart's default of `path`, when it is not empty.
    #[must_use]
    pub fn default_of(self, path: &str) -> Option<Value> {
        self.tables()
            .iter()
            .flat_map(|t| t.iter())
            .find(|(p, _)| *p == path)
            .map(|(_, d)| serde_json::from_str(d).unwrap_or_else(|_| json!(d)))
    }

    /// Whether `v` at `path` is empty, false, or this generation's own default: nothing a
    /// user chose.
    #[must_use]
    pub fn is_default(self, path: &str, v: &Value) -> bool {
        let empty = match v {
            Value::Null => true,
            Value::Bool(b) => !b && self.default_of(path) != Some(json!(true)),
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::Number(_) => false,
        };
        empty
            || is_pinned_tag(path, v)
            || self.default_of(path).is_some_and(|d| {
                d == *v
                    || v.as_str().is_some_and(|s| {
                        d.as_str() == Some(s)
                            || serde_json::from_str::<Value>(s).is_ok_and(|p| p == d)
                    })
                    || v.as_i64()
                        .is_some_and(|n| d.as_str().and_then(|s| s.parse().ok()) == Some(n))
            })
    }

    /// The requests and limits the chart's pods had without `resources` in the file.
    #[must_use]
    pub fn default_resources(self) -> Value {
        match self {
            Self::Six => json!({"requests": {"cpu": "250m", "memory": "256Mi"}}),
            Self::Seven | Self::Eight => preset("nano").unwrap_or_default(),
        }
    }

    fn tables(self) -> &'static [&'static [(&'static str, &'static str)]] {
        match self {
            Self::Six => &[COMMON, SIX, BEFORE_EIGHT],
            Self::Seven => &[COMMON, SEVEN_ON, BEFORE_EIGHT],
            Self::Eight => &[COMMON, SEVEN_ON, EIGHT],
        }
    }
}

/// A tag of the chart's own Bitnami images (`<version>-debian-<n>-r<m>`): the chart pins one
/// per release, and no image of the chart carries over.
fn is_pinned_tag(path: &str, v: &Value) -> bool {
    (path == "image.tag" || path.ends_with(".image.tag"))
        && v.as_str().is_some_and(|t| t.contains("-debian-"))
}

/// The `resourcesPreset` values of the chart's library: requests and limits per name.
#[must_use]
pub fn preset(name: &str) -> Option<Value> {
    let (cpu, memory, cpu_limit, memory_limit) = match name {
        "nano" => ("100m", "128Mi", "150m", "192Mi"),
        "micro" => ("250m", "256Mi", "375m", "384Mi"),
        "small" => ("500m", "512Mi", "750m", "768Mi"),
        "medium" => ("500m", "1024Mi", "750m", "1536Mi"),
        "large" => ("1", "2048Mi", "1500m", "3072Mi"),
        "xlarge" => ("1500m", "4096Mi", "3", "6144Mi"),
        "2xlarge" => ("1500m", "4096Mi", "6", "12288Mi"),
        _ => return None,
    };
    Some(json!({
        "requests": {"cpu": cpu, "memory": memory, "ephemeral-storage": "50Mi"},
        "limits": {"cpu": cpu_limit, "memory": memory_limit, "ephemeral-storage": "1024Mi"},
    }))
}

/// The names of a release's objects: `fullnameOverride`, else the release's name when it holds
/// the chart's name, else `<release>-<name>` (63 characters at most, no trailing `-`).
#[must_use]
pub fn fullname(values: &Value, release: &str) -> String {
    let text = |key: &str| values[key].as_str().filter(|s| !s.is_empty());
    let full = text("fullnameOverride").map_or_else(
        || {
            let name = app_name(values);
            if release.contains(name) {
                release.to_owned()
            } else {
                format!("{release}-{name}")
            }
        },
        str::to_owned,
    );
    full.chars()
        .take(63)
        .collect::<String>()
        .trim_end_matches('-')
        .to_owned()
}

/// The release pods' `app.kubernetes.io/name`: `nameOverride`, else the chart's name.
#[must_use]
pub fn app_name(values: &Value) -> &str {
    values["nameOverride"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("memcached")
}

/// Defaults of every generation that are not empty (a value as JSON, or as a bare string).
const COMMON: &[(&str, &str)] = &[
    ("clusterDomain", "cluster.local"),
    ("diagnosticMode.command", "[\"sleep\"]"),
    ("diagnosticMode.args", "[\"infinity\"]"),
    ("image.registry", "docker.io"),
    ("image.repository", "bitnami/memcached"),
    ("image.pullPolicy", "IfNotPresent"),
    ("architecture", "standalone"),
    ("replicaCount", "1"),
    ("containerPorts.memcached", "11211"),
    ("livenessProbe.enabled", "true"),
    ("livenessProbe.initialDelaySeconds", "30"),
    ("livenessProbe.periodSeconds", "10"),
    ("livenessProbe.timeoutSeconds", "5"),
    ("livenessProbe.failureThreshold", "6"),
    ("livenessProbe.successThreshold", "1"),
    ("readinessProbe.enabled", "true"),
    ("readinessProbe.initialDelaySeconds", "5"),
    ("readinessProbe.periodSeconds", "5"),
    ("readinessProbe.timeoutSeconds", "3"),
    ("readinessProbe.failureThreshold", "6"),
    ("readinessProbe.successThreshold", "1"),
    ("startupProbe.initialDelaySeconds", "30"),
    ("startupProbe.periodSeconds", "10"),
    ("startupProbe.timeoutSeconds", "1"),
    ("startupProbe.failureThreshold", "15"),
    ("startupProbe.successThreshold", "1"),
    ("podSecurityContext.enabled", "true"),
    ("podSecurityContext.fsGroup", "1001"),
    ("containerSecurityContext.enabled", "true"),
    ("containerSecurityContext.runAsUser", "1001"),
    ("containerSecurityContext.runAsNonRoot", "true"),
    ("podAntiAffinityPreset", "soft"),
    ("podManagementPolicy", "Parallel"),
    ("updateStrategy.type", "RollingUpdate"),
    ("autoscaling.minReplicas", "3"),
    ("autoscaling.maxReplicas", "6"),
    ("autoscaling.targetCPU", "50"),
    ("autoscaling.targetMemory", "50"),
    ("service.type", "ClusterIP"),
    ("service.ports.memcached", "11211"),
    ("service.sessionAffinity", "None"),
    ("service.externalTrafficPolicy", "Cluster"),
    ("persistence.accessModes", "[\"ReadWriteOnce\"]"),
    ("persistence.size", "8Gi"),
    ("volumePermissions.image.registry", "docker.io"),
    ("volumePermissions.image.pullPolicy", "IfNotPresent"),
    ("volumePermissions.containerSecurityContext.runAsUser", "0"),
    ("metrics.image.registry", "docker.io"),
    ("metrics.image.repository", "bitnami/memcached-exporter"),
    ("metrics.image.pullPolicy", "IfNotPresent"),
    ("metrics.containerPorts.metrics", "9150"),
    ("metrics.containerSecurityContext.enabled", "true"),
    ("metrics.containerSecurityContext.runAsUser", "1001"),
    ("metrics.containerSecurityContext.runAsNonRoot", "true"),
    ("metrics.livenessProbe.enabled", "true"),
    ("metrics.livenessProbe.initialDelaySeconds", "15"),
    ("metrics.livenessProbe.periodSeconds", "10"),
    ("metrics.livenessProbe.timeoutSeconds", "5"),
    ("metrics.livenessProbe.failureThreshold", "3"),
    ("metrics.livenessProbe.successThreshold", "1"),
    ("metrics.readinessProbe.enabled", "true"),
    ("metrics.readinessProbe.initialDelaySeconds", "5"),
    ("metrics.readinessProbe.periodSeconds", "10"),
    ("metrics.readinessProbe.timeoutSeconds", "3"),
    ("metrics.readinessProbe.failureThreshold", "3"),
    ("metrics.readinessProbe.successThreshold", "1"),
    ("metrics.startupProbe.initialDelaySeconds", "10"),
    ("metrics.startupProbe.periodSeconds", "10"),
    ("metrics.startupProbe.timeoutSeconds", "1"),
    ("metrics.startupProbe.failureThreshold", "15"),
    ("metrics.startupProbe.successThreshold", "1"),
    (
        "metrics.podAnnotations",
        "{\"prometheus.io/scrape\": \"true\", \
          \"prometheus.io/port\": \"{{ .Values.metrics.containerPorts.metrics }}\"}",
    ),
    ("metrics.service.ports.metrics", "9150"),
    ("metrics.service.sessionAffinity", "None"),
    (
        "metrics.service.annotations",
        "{\"prometheus.io/scrape\": \"true\", \
          \"prometheus.io/port\": \"{{ .Values.metrics.service.ports.metrics }}\"}",
    ),
];

/// 6.x only: fixed requests, the older shell image, a ServiceAccount token mounted.
const SIX: &[(&str, &str)] = &[
    ("resources.requests.cpu", "250m"),
    ("resources.requests.memory", "256Mi"),
    (
        "volumePermissions.image.repository",
        "bitnami/bitnami-shell",
    ),
    ("serviceAccount.automountServiceAccountToken", "true"),
];

/// 7.x and 8.x: presets, hardened contexts, a NetworkPolicy and a ServiceAccount.
const SEVEN_ON: &[(&str, &str)] = &[
    (
        "global.compatibility.openshift.adaptSecurityContext",
        "auto",
    ),
    ("resourcesPreset", "nano"),
    ("podSecurityContext.fsGroupChangePolicy", "Always"),
    ("containerSecurityContext.runAsGroup", "1001"),
    ("containerSecurityContext.readOnlyRootFilesystem", "true"),
    ("containerSecurityContext.capabilities.drop", "[\"ALL\"]"),
    (
        "containerSecurityContext.seccompProfile.type",
        "RuntimeDefault",
    ),
    ("enableServiceLinks", "true"),
    ("networkPolicy.enabled", "true"),
    ("networkPolicy.allowExternal", "true"),
    ("networkPolicy.allowExternalEgress", "true"),
    ("serviceAccount.create", "true"),
    ("volumePermissions.image.repository", "bitnami/os-shell"),
    ("volumePermissions.resourcesPreset", "nano"),
    ("metrics.resourcesPreset", "nano"),
    ("metrics.containerSecurityContext.runAsGroup", "1001"),
    (
        "metrics.containerSecurityContext.readOnlyRootFilesystem",
        "true",
    ),
    (
        "metrics.containerSecurityContext.capabilities.drop",
        "[\"ALL\"]",
    ),
    (
        "metrics.containerSecurityContext.seccompProfile.type",
        "RuntimeDefault",
    ),
];

/// 6.x and 7.x: no budget unless asked, one pod unavailable when asked.
const BEFORE_EIGHT: &[(&str, &str)] = &[("pdb.maxUnavailable", "1")];

/// 8.x: a budget by default (the chart renders `maxUnavailable: 1` when neither bound is set),
/// the password read from a mounted file.
const EIGHT: &[(&str, &str)] = &[("pdb.create", "true"), ("usePasswordFiles", "true")];
