//! The conversion itself: each group of the chart's values read into the Memcached's spec.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail};
use serde_json::{Map, Value, json};

use super::chart::{self, Generation};
use super::values::{insert_path, int, int_or_percent, is_default_empty, item_size};

/// The conversion under way: the leaves not yet read, the spec being written.
pub(super) struct Conversion {
    pub(super) leaves: BTreeMap<String, Value>,
    pub(super) spec: Map<String, Value>,
    /// memcached flags that go to `extraArgs`.
    pub(super) extra: Vec<String>,
    /// `(what, why)` of what was read but not carried over, besides the leaves left.
    pub(super) notes: Vec<(String, String)>,
    /// Warnings and steps for the user, each a paragraph.
    pub(super) notices: Vec<String>,
    /// The chart generation whose defaults apply.
    pub(super) generation: Generation,
}

impl Conversion {
    pub(super) fn new(leaves: BTreeMap<String, Value>, generation: Generation) -> Self {
        Self {
            leaves,
            spec: Map::new(),
            extra: Vec::new(),
            notes: Vec::new(),
            notices: Vec::new(),
            generation,
        }
    }

    /// Takes the leaf at `path`, if set (empty values count as unset).
    pub(super) fn take(&mut self, path: &str) -> Option<Value> {
        self.leaves.remove(path).filter(|v| !is_default_empty(v))
    }

    /// Takes the leaf at `path` if it differs from the chart's default.
    pub(super) fn take_chosen(&mut self, path: &str) -> Option<Value> {
        let v = self.leaves.remove(path)?;
        (!self.generation.is_default(path, &v)).then_some(v)
    }

    /// Takes the leaf at `path`, else the chart's default for it: what the release ran with.
    pub(super) fn effective(&mut self, path: &str) -> Option<Value> {
        self.take(path).or_else(|| self.generation.default_of(path))
    }

    /// Takes every leaf under `prefix` as one object (`prefix.a.b` -> `{a: {b: ..}}`); with
    /// `chosen`, only the leaves that differ from the chart's defaults.
    pub(super) fn take_object_of(&mut self, prefix: &str, chosen: bool) -> Option<Value> {
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
            if is_default_empty(&v) || (chosen && self.generation.is_default(&key, &v)) {
                continue;
            }
            if key == prefix {
                return Some(v);
            }
            let parts: Vec<&str> = key[dotted.len()..].split('.').collect();
            insert_path(&mut out, &parts, v);
        }
        out.as_object()
            .is_some_and(|m| !m.is_empty())
            .then_some(out)
    }

    /// [`Self::take_object_of`] of every leaf.
    pub(super) fn take_object(&mut self, prefix: &str) -> Option<Value> {
        self.take_object_of(prefix, false)
    }

    pub(super) fn set(&mut self, path: &[&str], v: Value) {
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

    /// Whether the Memcached runs a StatefulSet (the chart's `high-availability`).
    pub(super) fn stateful(&self) -> bool {
        self.spec.get("workload") == Some(&json!("StatefulSet"))
    }

    /// `replicaCount` and `architecture`.
    pub(super) fn workload(&mut self) -> anyhow::Result<()> {
        if let Some(v) = self.take_chosen("replicaCount") {
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

    /// `spec.memcached` from memcached's flags ([`Self::flags`]); the others go to `extraArgs`,
    /// except binary-protocol SASL (`-S`), and with `sasl` the protocol choice (`-B`): memcached
    /// with ASCII authentication refuses the binary protocol.
    pub(super) fn memcached(&mut self, sasl: bool) -> anyhow::Result<()> {
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
            } else if !self.dropped(&key, value, sasl, &mut it) {
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

    /// Takes a flag the Memcached must not pass on, with the reason: binary-protocol SASL
    /// (`-S`), and with `sasl` the protocol (`-B`), which memcached with ASCII authentication
    /// refuses. Whether `key` (with `value`, or the next of `rest`) was one.
    fn dropped(
        &mut self,
        key: &str,
        value: Option<String>,
        sasl: bool,
        rest: &mut impl Iterator<Item = String>,
    ) -> bool {
        if key == "-S" || key == "--enable-sasl" {
            self.notes.push((
                format!("memcached flag {key}"),
                "SASL over the binary protocol; the Memcached authenticates with \
                 spec.security.sasl (ASCII protocol, set from auth.enabled)"
                    .into(),
            ));
            return true;
        }
        if !sasl || !(key.starts_with("-B") || key == "--protocol") {
            return false;
        }
        let value = match value {
            Some(v) => v,
            None if key == "-B" || key == "--protocol" => rest.next().unwrap_or_default(),
            None => key.trim_start_matches("-B").to_owned(),
        };
        self.notes.push((
            format!(
                "memcached flag {} {value}",
                if key == "--protocol" { key } else { "-B" }
            ),
            "memcached refuses the binary protocol with ASCII authentication \
             (spec.security.sasl): clients speak the ASCII protocol"
                .into(),
        ));
        true
    }

    /// Resources, placement, pod metadata, pull secrets, security contexts, Service annotations.
    ///
    /// # Errors
    /// A `resourcesPreset` that is not one of the chart's.
    pub(super) fn pod(&mut self) -> anyhow::Result<()> {
        let preset = self.take_chosen("resourcesPreset");
        // A whole `resources` when any of it was chosen: the chart set it as one.
        let chosen = self
            .leaves
            .iter()
            .any(|(k, v)| k.starts_with("resources") && !self.generation.is_default(k, v));
        let resources = self.take_object("resources").filter(|_| chosen);
        if let Some(r) = resources {
            self.set(&["resources"], r);
        } else if let Some(name) = preset.as_ref().and_then(Value::as_str) {
            match chart::preset(name) {
                Some(r) => self.set(&["resources"], r),
                None if name == "none" => {}
                None => bail!(
                    "resourcesPreset: {name:?} is not one of the chart's presets (nano, micro, \
                     small, medium, large, xlarge, 2xlarge, none)"
                ),
            }
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
        self.contexts();
        if let Some(a) = self.take_object("service.annotations") {
            self.set(&["service", "annotations"], a);
        }
        Ok(())
    }

    /// The security contexts: only what the user changed from the chart's (uid and gid 1001,
    /// fsGroup 1001, ...) carries over, without the chart's `enabled` switch; the rest is the
    /// hook's own.
    fn contexts(&mut self) {
        for (from, to) in [
            ("podSecurityContext", "podSecurityContext"),
            ("containerSecurityContext", "containerSecurityContext"),
        ] {
            let enabled = self.effective(&format!("{from}.enabled"));
            let changed = self.take_object_of(from, true);
            if enabled == Some(Value::Bool(true))
                && let Some(context) = changed
            {
                self.set(&["security", to], context);
            }
        }
    }

    /// Anti-affinity, spread, budget, autoscaling, termination grace.
    pub(super) fn availability(&mut self) -> anyhow::Result<()> {
        match self
            .take_chosen("podAntiAffinityPreset")
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
        self.budget();
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

    /// `pdb`: the chart made a budget for `high-availability` only, with `minAvailable` when
    /// set, else `maxUnavailable` (1 when neither is set).
    fn budget(&mut self) {
        let chosen = self.take_chosen("pdb.create");
        let create = chosen
            .clone()
            .or_else(|| self.generation.default_of("pdb.create"));
        let min = self.take("pdb.minAvailable");
        let max = self.take("pdb.maxUnavailable");
        if create != Some(Value::Bool(true)) {
            return;
        }
        if !self.stateful() {
            if chosen.is_some() {
                self.notes.push((
                    "pdb.create".into(),
                    "the chart made a budget only with architecture high-availability".into(),
                ));
            }
            return;
        }
        let mut budget = json!({"enabled": true});
        match min {
            Some(min) => budget["minAvailable"] = int_or_percent(&min),
            None => budget["maxUnavailable"] = max.map_or(json!(1), |m| int_or_percent(&m)),
        }
        self.set(&["highAvailability", "podDisruptionBudget"], budget);
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
                let defaults = self.generation.default_resources();
                self.set(&["resources"], defaults);
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
    pub(super) fn monitoring(&mut self) {
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
        self.leaves.remove("metrics.podAnnotations");
        self.leaves.remove("metrics.service.annotations");
        self.set(&["monitoring"], m);
    }
}
