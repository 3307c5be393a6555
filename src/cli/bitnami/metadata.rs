//! `commonLabels` and `commonAnnotations`, and `persistence`: values of the whole release that
//! land on every child of the Memcached, its pods and its warm restart.

use serde_json::{Map, Value, json};

use super::conversion::Conversion;

/// Label keys the hook writes itself, on the pods and the Service.
const OWN_LABELS: &[&str] = &[
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
    "controller-uid",
];

/// The prefixes of the annotations the hook and Metacontroller write on the children.
const OWN_ANNOTATIONS: &[&str] = &["memcached.c5c3.io/", "metacontroller.k8s.io/"];

impl Conversion {
    /// `commonLabels` onto every child's labels (`childMetadata`) and the pods', as the chart
    /// put them on every object and pod; `commonAnnotations` onto every child's annotations and
    /// the pods'. A key also set more specifically (`podLabels`, ...) keeps that value.
    pub(super) fn common_metadata(&mut self) {
        for (common, targets) in [
            (
                "commonLabels",
                [&["childMetadata", "labels"][..], &["podLabels"]],
            ),
            (
                "commonAnnotations",
                [&["childMetadata", "annotations"][..], &["podAnnotations"]],
            ),
        ] {
            let Some(Value::Object(map)) = self.take_object(common) else {
                continue;
            };
            let mut kept = Map::new();
            for (key, value) in map {
                let owned = if common == "commonLabels" {
                    OWN_LABELS.contains(&key.as_str())
                } else {
                    OWN_ANNOTATIONS.iter().any(|p| key.starts_with(p))
                };
                if owned {
                    self.notes.push((
                        format!("{common}.{key}"),
                        "the hook writes this key itself".into(),
                    ));
                } else {
                    kept.insert(key, value);
                }
            }
            if kept.is_empty() {
                continue;
            }
            for target in targets {
                let mut merged = kept.clone();
                if let Some(Value::Object(specific)) = self.get(target) {
                    merged.extend(specific.clone());
                }
                self.set(target, Value::Object(merged));
            }
        }
    }

    /// `persistence`: the chart's memory file on a volume per pod, written by a stop hook, is
    /// the Memcached's warm restart (a StatefulSet only, as the chart's was).
    pub(super) fn persistence(&mut self) {
        let enabled = self.take("persistence.enabled") == Some(Value::Bool(true));
        if !enabled {
            return;
        }
        if !self.stateful() {
            self.notes.push((
                "persistence.enabled".into(),
                "the chart kept a memory file only with architecture high-availability; \
                 spec.warmRestart needs workload StatefulSet"
                    .into(),
            ));
            return;
        }
        let mut warm = json!({"enabled": true});
        if let Some(class) = self
            .take("persistence.storageClass")
            .or_else(|| self.take("global.storageClass"))
        {
            warm["storageClassName"] = class;
        }
        if let Some(size) = self.take_chosen("persistence.size") {
            warm["size"] = size;
        }
        self.set(&["warmRestart"], warm);
    }

    /// The spec's value at `path`, if set.
    fn get(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        rest.iter()
            .try_fold(self.spec.get(*first)?, |at, part| at.get(part))
    }
}
