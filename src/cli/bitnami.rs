//! `memcached-hook from-bitnami`: a Memcached (and its SASL Secret) from the values file of the
//! retired Bitnami memcached chart, with what has no counterpart named instead of dropped.
//!
//! Only what the file sets is read: a value left out keeps the chart's default, which the
//! Memcached's own default replaces (docs/install.md, "Moving from the Bitnami chart", lists
//! the differences). Values equal to the chart's defaults are not reported.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, anyhow, bail};
use serde_json::{Map, Value, json};

use super::input::{INPUT_LIMIT, read_bounded};

/// The chart's defaults that are not empty, for the values the Memcached does not carry: a
/// file that repeats them (many start as a copy of the chart's values.yaml) reports nothing.
const CHART_DEFAULTS: &[(&str, &str)] = &[
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
        "a cache keeps no volume; spec.warmRestart keeps its contents across restarts",
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
        "auth.existingPasswordSecret",
        "create a Secret with the key password-file holding `user:password` lines and name it in \
         spec.security.sasl.credentialsSecretRef",
    ),
    (
        "serviceAccount.",
        "memcached pods need no ServiceAccount token (the hook mounts none)",
    ),
    (
        "networkPolicy.",
        "set spec.security.networkPolicy (allowed sources by label)",
    ),
];

/// What the conversion produced: the objects, and the values left out with the reason.
#[derive(Debug, Default)]
pub struct Converted {
    /// The Memcached, then a Secret when the file holds a SASL password.
    pub objects: Vec<Value>,
    /// `(value path, why)` of each value set in the file that the Memcached does not carry.
    pub left_out: Vec<(String, String)>,
}

/// The values of `values` (a parsed values file) as a Memcached named `name`.
///
/// # Errors
/// A value the Memcached would carry but cannot read (e.g. `replicaCount: many`).
pub fn convert(values: &Value, name: &str, namespace: Option<&str>) -> anyhow::Result<Converted> {
    let mut leaves = BTreeMap::new();
    flatten(values, "", &mut leaves);
    let mut c = Conversion {
        leaves,
        spec: Map::new(),
        extra: Vec::new(),
    };
    c.workload()?;
    c.memcached()?;
    c.pod();
    c.availability()?;
    c.monitoring();
    let sasl = c.auth(name);
    let Conversion {
        leaves, mut spec, ..
    } = c;
    if let Some(secret) = &sasl {
        spec.insert(
            "security".into(),
            json!({"sasl": {"enabled": true,
                            "credentialsSecretRef": {"name": secret["metadata"]["name"]}}}),
        );
    }
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    let memcached = json!({
        "apiVersion": "memcached.c5c3.io/v1beta1",
        "kind": "Memcached",
        "metadata": metadata,
        "spec": spec,
    });
    let mut objects = vec![memcached];
    if let Some(mut secret) = sasl {
        if let Some(ns) = namespace {
            secret["metadata"]["namespace"] = json!(ns);
        }
        objects.push(secret);
    }
    let left_out = leaves
        .into_iter()
        .filter(|(path, v)| !is_default(path, v))
        .map(|(path, _)| {
            let why = NOT_CARRIED
                .iter()
                .find(|(prefix, _)| path.starts_with(prefix))
                .map_or("no counterpart in a Memcached", |(_, why)| why);
            (path, why.to_owned())
        })
        .collect();
    Ok(Converted { objects, left_out })
}

/// The values file at `path` as YAML: the objects, with what was left out as comments on top.
///
/// # Errors
/// An unreadable file, not YAML or not a mapping, or a value that cannot be read.
pub fn from_bitnami(
    path: &Path,
    name: Option<&str>,
    namespace: Option<&str>,
) -> anyhow::Result<String> {
    let file = path.display().to_string();
    let bytes = read_bounded(path, INPUT_LIMIT)?;
    let text = String::from_utf8(bytes).with_context(|| format!("{file}: not UTF-8 text"))?;
    let values: Value =
        serde_saphyr::from_str(&text).map_err(|e| anyhow!("{file}: not YAML: {e}"))?;
    let values = if values.is_null() { json!({}) } else { values };
    if !values.is_object() {
        bail!("{file}: not a values file (a mapping of the chart's values)");
    }
    let mut values = values;
    let named = ["fullnameOverride", "nameOverride"]
        .iter()
        .find_map(|key| text_value(&values, key));
    // The release's name becomes the Memcached's (its objects are named after it).
    if let Some(map) = values.as_object_mut() {
        map.remove("fullnameOverride");
        map.remove("nameOverride");
    }
    let name = name
        .map(str::to_owned)
        .or(named)
        .unwrap_or_else(|| "memcached".to_owned());
    let converted = convert(&values, &name, namespace).map_err(|e| anyhow!("{file}: {e}"))?;
    let mut out = String::new();
    if converted.left_out.is_empty() {
        out.push_str(
            "# Every value set in the file carries over (values equal to the chart's defaults \
             are not read).\n",
        );
    } else {
        out.push_str("# Not carried over from the values file:\n");
        for (path, why) in &converted.left_out {
            let _ = writeln!(out, "#   {path}: {why}");
        }
    }
    for object in &converted.objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object).context("encoding as YAML")?);
    }
    Ok(out)
}

fn text_value(values: &Value, key: &str) -> Option<String> {
    values[key]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Maps of labels, annotations or node labels, whose keys may hold dots: kept whole.
const WHOLE: &[&str] = &[
    "commonLabels",
    "commonAnnotations",
    "podLabels",
    "podAnnotations",
    "nodeSelector",
    "affinity",
    "service.annotations",
    "metrics.podAnnotations",
    "metrics.service.annotations",
    "metrics.serviceMonitor.labels",
    "metrics.serviceMonitor.selector",
    "persistence.annotations",
    "persistence.labels",
    "persistence.selector",
    "serviceAccount.annotations",
];

/// The chart's default requests: what its pods asked for when the file sets no `resources`.
const CHART_REQUESTS: (&str, &str) = ("250m", "256Mi");

/// Every leaf of `v` under its dotted path; a list, and a map of [`WHOLE`], is one leaf.
fn flatten(v: &Value, prefix: &str, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(map) if !map.is_empty() && !WHOLE.contains(&prefix) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(v, &path, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned(), v.clone());
        }
    }
}

/// Empty, false, or the chart's own default: nothing a user chose.
fn is_default(path: &str, v: &Value) -> bool {
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

/// The conversion under way: the leaves not yet read, the spec being written.
struct Conversion {
    leaves: BTreeMap<String, Value>,
    spec: Map<String, Value>,
    /// memcached flags that go to `extraArgs`.
    extra: Vec<String>,
}

impl Conversion {
    /// Takes the leaf at `path`, if set (empty values count as unset).
    fn take(&mut self, path: &str) -> Option<Value> {
        self.leaves.remove(path).filter(|v| !is_default_empty(v))
    }

    /// Takes every leaf under `prefix` as one object (`prefix.a.b` -> `{a: {b: ..}}`).
    fn take_object(&mut self, prefix: &str) -> Option<Value> {
        let dotted = format!("{prefix}.");
        let keys: Vec<String> = self
            .leaves
            .keys()
            .filter(|k| k.starts_with(&dotted) || *k == prefix)
            .cloned()
            .collect();
        let mut out = json!({});
        for key in keys {
            let v = self.leaves.remove(&key).unwrap_or(Value::Null);
            if key == prefix {
                if !is_default_empty(&v) {
                    return Some(v);
                }
                continue;
            }
            if is_default_empty(&v) {
                continue;
            }
            let parts: Vec<&str> = key[dotted.len()..].split('.').collect();
            insert_path(&mut out, &parts, v);
        }
        out.as_object()
            .is_some_and(|m| !m.is_empty())
            .then_some(out)
    }

    fn set(&mut self, path: &[&str], v: Value) {
        let mut at = &mut self.spec;
        for part in &path[..path.len() - 1] {
            let entry = at.entry((*part).to_owned()).or_insert_with(|| json!({}));
            let Some(next) = entry.as_object_mut() else {
                return;
            };
            at = next;
        }
        at.insert(path[path.len() - 1].to_owned(), v);
    }

    /// `replicaCount` and `architecture`.
    fn workload(&mut self) -> anyhow::Result<()> {
        if let Some(v) = self.take("replicaCount") {
            self.set(&["replicas"], json!(int(&v, "replicaCount")?));
        }
        match self.take("architecture").as_ref().and_then(Value::as_str) {
            Some("high-availability") => self.set(&["workload"], json!("StatefulSet")),
            None | Some("standalone") => {}
            Some(other) => {
                bail!("architecture: {other:?} is neither standalone nor high-availability")
            }
        }
        Ok(())
    }

    /// memcached's flags from `args` and the image's `MEMCACHED_*` variables in `extraEnvVars`.
    fn flags(&mut self) -> Vec<String> {
        let mut flags: Vec<String> = Vec::new();
        if let Some(Value::Array(env)) = self.leaves.get("extraEnvVars").cloned() {
            let mut rest = Vec::new();
            for var in env {
                let (Some(name), Some(value)) = (var["name"].as_str(), var["value"].as_str())
                else {
                    rest.push(var);
                    continue;
                };
                match name {
                    "MEMCACHED_CACHE_SIZE" => flags.extend(["-m".into(), value.to_owned()]),
                    "MEMCACHED_MAX_CONNECTIONS" => flags.extend(["-c".into(), value.to_owned()]),
                    "MEMCACHED_THREADS" => flags.extend(["-t".into(), value.to_owned()]),
                    "MEMCACHED_MAX_ITEM_SIZE" => flags.extend(["-I".into(), value.to_owned()]),
                    "MEMCACHED_EXTRA_FLAGS" => {
                        flags.extend(value.split_whitespace().map(str::to_owned));
                    }
                    _ => rest.push(var),
                }
            }
            self.leaves.remove("extraEnvVars");
            for var in rest {
                let name = var["name"].as_str().unwrap_or("(unnamed)").to_owned();
                self.leaves.insert(format!("extraEnvVars.{name}"), var);
            }
        }
        if let Some(Value::Array(args)) = self.take("args") {
            for arg in args {
                let arg = arg.as_str().map_or_else(|| arg.to_string(), str::to_owned);
                // The chart's examples start with the image's script: `/run.sh`.
                if arg.ends_with("run.sh") {
                    continue;
                }
                flags.extend(arg.split_whitespace().map(str::to_owned));
            }
        }
        flags
    }

    /// `spec.memcached` from memcached's flags ([`Self::flags`]); the others go to `extraArgs`.
    fn memcached(&mut self) -> anyhow::Result<()> {
        let flags = self.flags();
        let mut config = Map::new();
        let mut verbosity = 0;
        let mut it = flags.into_iter().peekable();
        while let Some(flag) = it.next() {
            let (key, value) = match flag.split_once('=') {
                Some((k, v)) if k.starts_with("--") => (k.to_owned(), Some(v.to_owned())),
                _ => (flag.clone(), None),
            };
            let field = match key.as_str() {
                "-m" | "--memory-limit" => Some("maxMemoryMB"),
                "-c" | "--conn-limit" => Some("maxConnections"),
                "-t" | "--threads" => Some("threads"),
                "-I" | "--max-item-size" => Some("maxItemSize"),
                _ => None,
            };
            if let Some(field) = field {
                let value = value
                    .or_else(|| it.next())
                    .ok_or_else(|| anyhow!("memcached flag {key} without a value"))?;
                let v =
                    if field == "maxItemSize" {
                        json!(item_size(&value)?)
                    } else {
                        json!(value.parse::<i64>().map_err(|_| anyhow!(
                            "memcached flag {key} {value}: not a whole number"
                        ))?)
                    };
                config.insert(field.into(), v);
            } else if key == "-vv" {
                verbosity = 2;
            } else if key == "-v" || key == "--verbose" {
                verbosity = (verbosity + 1).min(2);
            } else {
                self.extra.push(flag);
            }
        }
        if verbosity > 0 {
            config.insert("verbosity".into(), json!(verbosity));
        }
        if !self.extra.is_empty() {
            config.insert("extraArgs".into(), json!(self.extra));
        }
        if !config.is_empty() {
            self.set(&["memcached"], Value::Object(config));
        }
        Ok(())
    }

    /// Resources, placement, pod metadata, pull secrets, security contexts, Service annotations.
    fn pod(&mut self) {
        if let Some(r) = self.take_object("resources") {
            self.set(&["resources"], r);
        }
        for (from, to) in [
            ("podLabels", "podLabels"),
            ("podAnnotations", "podAnnotations"),
            ("nodeSelector", "nodeSelector"),
            ("tolerations", "tolerations"),
            ("affinity", "affinity"),
            ("priorityClassName", "priorityClassName"),
        ] {
            if let Some(v) = self.take_object(from) {
                self.set(&[to], v);
            }
        }
        let mut secrets: Vec<Value> = Vec::new();
        for path in ["global.imagePullSecrets", "image.pullSecrets"] {
            if let Some(Value::Array(list)) = self.take(path) {
                for s in list {
                    let name = s.as_str().map_or_else(|| s["name"].clone(), |n| json!(n));
                    let entry = json!({"name": name});
                    if !secrets.contains(&entry) {
                        secrets.push(entry);
                    }
                }
            }
        }
        if !secrets.is_empty() {
            self.set(&["imagePullSecrets"], Value::Array(secrets));
        }
        // The chart's own contexts (1001, fsGroup 1001) are left to the hook's defaults; a
        // context the user changed carries over without the chart's `enabled` switch.
        for (from, to) in [
            ("podSecurityContext", "podSecurityContext"),
            ("containerSecurityContext", "containerSecurityContext"),
        ] {
            let enabled = self.leaves.remove(&format!("{from}.enabled"));
            let changed: Vec<String> = self
                .leaves
                .iter()
                .filter(|(k, v)| k.starts_with(&format!("{from}.")) && !is_default(k, v))
                .map(|(k, _)| k.clone())
                .collect();
            let context = self.take_object(from);
            if enabled != Some(Value::Bool(false))
                && !changed.is_empty()
                && let Some(context) = context
            {
                self.set(&["security", to], context);
            }
        }
        if let Some(a) = self.take_object("service.annotations") {
            self.set(&["service", "annotations"], a);
        }
    }

    /// Anti-affinity, spread, budget, autoscaling, termination grace.
    fn availability(&mut self) -> anyhow::Result<()> {
        match self
            .take("podAntiAffinityPreset")
            .as_ref()
            .and_then(Value::as_str)
        {
            Some(p @ ("soft" | "hard")) => {
                self.set(&["highAvailability", "antiAffinityPreset"], json!(p));
            }
            None => {}
            Some(other) => bail!("podAntiAffinityPreset: {other:?} is neither soft nor hard"),
        }
        if let Some(t) = self.take("topologySpreadConstraints") {
            self.set(&["highAvailability", "topologySpreadConstraints"], t);
        }
        let pdb = self.take("pdb.create") == Some(Value::Bool(true));
        let min = self.take("pdb.minAvailable");
        let max = self.take("pdb.maxUnavailable");
        if pdb {
            let mut budget = json!({"enabled": true});
            // The chart renders minAvailable when it is set, else maxUnavailable.
            match (min, max) {
                (Some(min), _) => budget["minAvailable"] = int_or_percent(&min),
                (None, Some(max)) => budget["maxUnavailable"] = int_or_percent(&max),
                (None, None) => {}
            }
            self.set(&["highAvailability", "podDisruptionBudget"], budget);
        }
        if let Some(v) = self.take("terminationGracePeriodSeconds") {
            self.set(
                &[
                    "highAvailability",
                    "gracefulShutdown",
                    "terminationGracePeriodSeconds",
                ],
                json!(int(&v, "terminationGracePeriodSeconds")?),
            );
        }
        self.autoscaling()
    }

    /// `autoscaling`: the HPA's bounds and targets.
    fn autoscaling(&mut self) -> anyhow::Result<()> {
        let enabled = self.take("autoscaling.enabled") == Some(Value::Bool(true));
        let min = self.leaves.remove("autoscaling.minReplicas");
        let max = self.leaves.remove("autoscaling.maxReplicas");
        let cpu = self.leaves.remove("autoscaling.targetCPU");
        let memory = self.leaves.remove("autoscaling.targetMemory");
        if enabled {
            let mut metrics = Vec::new();
            for (resource, target) in [
                ("cpu", cpu.or(Some(json!(50)))),
                ("memory", memory.or(Some(json!(50)))),
            ] {
                if let Some(t) = target.filter(|t| !is_default_empty(t)) {
                    metrics.push(json!({"type": "Resource", "resource": {"name": resource,
                        "target": {"type": "Utilization",
                                   "averageUtilization": int(&t, "autoscaling.target")?}}}));
                }
            }
            // The HPA's utilization is of the requests: without `resources` in the file, the
            // chart's default requests are what the pods asked for.
            if !self.spec.contains_key("resources") {
                let (cpu, memory) = CHART_REQUESTS;
                self.set(
                    &["resources"],
                    json!({"requests": {"cpu": cpu, "memory": memory}}),
                );
            }
            self.set(
                &["autoscaling"],
                json!({"enabled": true,
                       "minReplicas": int(&min.unwrap_or(json!(3)), "autoscaling.minReplicas")?,
                       "maxReplicas": int(&max.unwrap_or(json!(6)), "autoscaling.maxReplicas")?,
                       "metrics": metrics}),
            );
        }
        Ok(())
    }

    /// The exporter sidecar and its ServiceMonitor.
    fn monitoring(&mut self) {
        if self.take("metrics.enabled") != Some(Value::Bool(true)) {
            return;
        }
        let mut m = json!({"enabled": true});
        if let Some(r) = self.take_object("metrics.resources") {
            m["exporterResources"] = r;
        }
        if self.take("metrics.serviceMonitor.enabled") == Some(Value::Bool(true)) {
            let mut sm = json!({});
            if let Some(i) = self.take("metrics.serviceMonitor.interval") {
                sm["interval"] = i;
            }
            if let Some(t) = self.take("metrics.serviceMonitor.scrapeTimeout") {
                sm["scrapeTimeout"] = t;
            }
            if let Some(l) = self.take_object("metrics.serviceMonitor.labels") {
                sm["additionalLabels"] = l;
            }
            m["serviceMonitor"] = sm;
        }
        // The chart's scrape annotations point at its own exporter port; the hook's sidecar
        // is scraped through the ServiceMonitor.
        self.leaves
            .retain(|k, _| !k.starts_with("metrics.podAnnotations."));
        self.leaves
            .retain(|k, _| !k.starts_with("metrics.service.annotations."));
        self.set(&["monitoring"], m);
    }

    /// `auth`: a Secret in the hook's format when the file holds the password.
    fn auth(&mut self, name: &str) -> Option<Value> {
        if self.take("auth.enabled") != Some(Value::Bool(true)) {
            self.leaves.remove("auth.username");
            self.leaves.remove("auth.password");
            return None;
        }
        let user = self.take("auth.username");
        let password = self.take("auth.password");
        let (Some(user), Some(password)) = (
            user.as_ref().and_then(Value::as_str),
            password.as_ref().and_then(Value::as_str),
        ) else {
            // existingPasswordSecret, or a password the chart would generate: left out, named.
            self.leaves
                .entry("auth.existingPasswordSecret".into())
                .or_insert(json!("(none: the chart generated the password)"));
            return None;
        };
        Some(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": format!("{name}-sasl")},
            "type": "Opaque",
            "stringData": {"password-file": format!("{user}:{password}\n")},
        }))
    }
}

/// Sets `v` at `parts` below `root`, making the objects on the way.
fn insert_path(root: &mut Value, parts: &[&str], v: Value) {
    let Some((last, init)) = parts.split_last() else {
        return;
    };
    let mut at = root;
    for part in init {
        let Value::Object(map) = at else {
            return;
        };
        at = map.entry((*part).to_owned()).or_insert_with(|| json!({}));
    }
    if let Value::Object(map) = at {
        map.insert((*last).to_owned(), v);
    }
}

fn is_default_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn int(v: &Value, what: &str) -> anyhow::Result<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| anyhow!("{what}: {v} is not a whole number"))
}

fn int_or_percent(v: &Value) -> Value {
    v.as_str()
        .and_then(|s| s.parse::<i64>().ok())
        .map_or_else(|| v.clone(), |n| json!(n))
}

/// memcached's `-I` value (bytes, or with `k`/`m`) as `maxItemSize` (`<n>k` or `<n>m`).
fn item_size(value: &str) -> anyhow::Result<String> {
    let v = value.trim().to_ascii_lowercase();
    if let Some(n) = v.strip_suffix('k').or_else(|| v.strip_suffix('m'))
        && n.parse::<u64>().is_ok()
    {
        return Ok(v);
    }
    let bytes: u64 = v
        .parse()
        .map_err(|_| anyhow!("max item size {value:?}: not bytes, nor a number with k or m"))?;
    if bytes.is_multiple_of(1024 * 1024) {
        Ok(format!("{}m", bytes / (1024 * 1024)))
    } else if bytes.is_multiple_of(1024) {
        Ok(format!("{}k", bytes / 1024))
    } else {
        bail!("max item size {value}: not a whole number of KiB, which maxItemSize needs")
    }
}
