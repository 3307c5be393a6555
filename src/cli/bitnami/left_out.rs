//! The values a Memcached has no counterpart for, and why each is left out.

/// Prefixes of values with no counterpart in a Memcached, and why; the first match wins.
const NOT_CARRIED: &[(&str, &str)] = &[
    (
        "image.",
        "the Bitnami image and its entrypoint script are gone; the Memcached runs the upstream \
         memcached image (set spec.image to a mirror of it)",
    ),
    (
        "metrics.image.",
        "the Memcached's exporter is the upstream Prometheus exporter \
         (spec.monitoring.exporterImage)",
    ),
    (
        "persistence.",
        "the warm restart's volume is the hook's own; only persistence.enabled (with \
         high-availability), storageClass and size carry over, to spec.warmRestart",
    ),
    ("volumePermissions.", "no volume whose owner needs changing"),
    (
        "service.",
        "the Memcached's Service is headless on port 11211 (clients reach each pod); only \
         service.annotations carries over",
    ),
    (
        "metrics.service.",
        "the exporter is scraped on each pod (spec.monitoring.serviceMonitor)",
    ),
    ("livenessProbe.", "the probes are the hook's own"),
    ("readinessProbe.", "the probes are the hook's own"),
    ("startupProbe.", "the probes are the hook's own"),
    ("metrics.livenessProbe.", "the probes are the hook's own"),
    ("metrics.readinessProbe.", "the probes are the hook's own"),
    ("metrics.startupProbe.", "the probes are the hook's own"),
    (
        "extraEnvVars",
        "memcached reads no environment; only MEMCACHED_CACHE_SIZE, MEMCACHED_MAX_CONNECTIONS, \
         MEMCACHED_THREADS, MEMCACHED_MAX_ITEM_SIZE and MEMCACHED_EXTRA_FLAGS carry over",
    ),
    ("command", "the container's command is memcached itself"),
    ("sidecars", "the pod's containers are the hook's own"),
    ("initContainers", "the pod's containers are the hook's own"),
    ("extraVolumes", "the pod's volumes are the hook's own"),
    ("extraVolumeMounts", "the pod's volumes are the hook's own"),
    (
        "serviceAccount.",
        "memcached pods need no ServiceAccount token (the hook mounts none)",
    ),
    (
        "networkPolicy.",
        "set spec.security.networkPolicy (allowed sources by label)",
    ),
];

/// Why the value at `path` is not carried over.
pub(super) fn reason(path: &str) -> &'static str {
    NOT_CARRIED
        .iter()
        .find(|(prefix, _)| path.starts_with(prefix))
        .map_or("no counterpart in a Memcached", |(_, why)| why)
}
