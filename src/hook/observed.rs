//! Observed children and related objects, collected by value from Metacontroller's nested maps.
//!
//! Both levels refuse a repeated key (`duplicate key "cache"`, at `children.Service.v1`): the
//! API server never sends one, and two objects under one key would both be collected. The
//! objects themselves are decoded through the same check ([`super::strict`]), so their metadata
//! and a related Secret's `data` refuse repeated keys too; what [`ObservedChild`] and
//! [`super::RelatedObject`] skip (`managedFields`, pod templates, labels, other annotations) is not
//! looked at.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Unexpected, Visitor};
use serde_json::value::RawValue;

/// All objects of a `children` or `related` map, in request order; keys are only checked for
/// repeats, never read.
#[derive(Debug)]
pub struct Observed<T = ObservedChild>(pub Vec<T>);

impl<T> Default for Observed<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<'a, T> IntoIterator for &'a Observed<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T> Observed<T> {
    /// Iterates over the objects.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }

    /// Whether no object was observed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Observed<ObservedChild> {
    /// The observed child of `kind` in `api_version` named `name`.
    #[must_use]
    pub fn find(&self, api_version: &str, kind: &str, name: &str) -> Option<&ObservedChild> {
        self.0
            .iter()
            .find(|c| c.kind == kind && c.api_version == api_version && c.metadata.name == name)
    }
}

struct OuterVisitor<T>(PhantomData<T>);
struct InnerVisitor<'v, T>(&'v mut Vec<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for OuterVisitor<T> {
    type Value = Observed<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from \"Kind.apiVersion\" to a map of objects")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Observed::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut all = Vec::new();
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(InnerSeed(&mut all))?;
        }
        Ok(Observed(all))
    }
}

struct InnerSeed<'v, T>(&'v mut Vec<T>);

impl<'de, T: Deserialize<'de>> serde::de::DeserializeSeed<'de> for InnerSeed<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_option(InnerVisitor(self.0))
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for InnerVisitor<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from object key to object")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            self.0.push(map.next_value()?);
        }
        Ok(())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Observed<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::strict::Strict(deserializer).deserialize_option(OptionVisitor(PhantomData))
    }
}

struct OptionVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for OptionVisitor<T> {
    type Value = Observed<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from \"Kind.apiVersion\" to a map of objects")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Observed::default())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Observed::default())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(OuterVisitor(PhantomData))
    }
}

/// An observed child: what the hook needs of it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservedChild {
    /// e.g. `apps/v1`.
    pub api_version: String,
    /// e.g. `Deployment`.
    pub kind: String,
    /// Name, namespace and the annotations the hook reads.
    pub metadata: ChildMeta,
    /// `spec.replicas` of a workload.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub spec: ChildSpec,
    /// Rollout counters of a workload.
    #[serde(default)]
    pub status: ChildStatus,
}

/// Child metadata the hook reads.
#[derive(Debug, Default, Deserialize)]
pub struct ChildMeta {
    /// Object name.
    pub name: String,
    /// Object namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// `metadata.generation`.
    #[serde(default)]
    pub generation: Option<i64>,
    /// Annotations the hook reads.
    #[serde(default)]
    pub annotations: Option<ChildAnnotations>,
}

/// Child annotations the hook reads.
#[derive(Debug, Default, Deserialize)]
pub struct ChildAnnotations {
    /// What this hook desired last time (Metacontroller's dynamic apply stores it).
    #[serde(rename = "metacontroller.k8s.io/last-applied-configuration", default)]
    pub last_applied: Option<RawString>,
    /// The memory layouts a StatefulSet's pods may hold, as this hook recorded them
    /// (`src/children/running_layouts.rs`).
    #[serde(rename = "memcached.c5c3.io/running-layouts", default)]
    pub running_layouts: Option<String>,
    /// The hash of the pod template this hook gave a zone's workload
    /// (`src/workload/rollout.rs`).
    #[serde(rename = "memcached.c5c3.io/template-hash", default)]
    pub template_hash: Option<String>,
    /// The digest of the intent the pod template was rendered for (`src/workload/intent.rs`).
    #[serde(rename = "memcached.c5c3.io/source", default)]
    pub source: Option<String>,
}

/// A JSON string kept as it came, quotes and escapes included: decoding checks that it is a
/// string and copies it, and it is unescaped only when read.
///
/// The last-applied annotation is read only for an invalid spec, but it is the longest string
/// of a request (1.5 KB for a Deployment, an escape every few bytes): unescaping it on every
/// sync cost 6 % of decoding (BENCHMARKS.md).
#[derive(Debug)]
pub struct RawString(Box<RawValue>);

impl RawString {
    /// The string, unescaped; `None` when it does not unescape to text (a lone surrogate
    /// escape, which a kept child cannot carry either).
    #[must_use]
    pub fn text(&self) -> Option<String> {
        serde_json::from_str(self.0.get()).ok()
    }

    /// Whether it is the empty string.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.get() == "\"\""
    }
}

impl<'de> Deserialize<'de> for RawString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        if raw.get().starts_with('"') {
            return Ok(Self(raw));
        }
        // Not a string: the error a `String` field gives for the same value.
        let value: serde_json::Value =
            serde_json::from_str(raw.get()).map_err(serde::de::Error::custom)?;
        let unexpected = match &value {
            serde_json::Value::Null => Unexpected::Unit,
            serde_json::Value::Bool(b) => Unexpected::Bool(*b),
            serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => Unexpected::Unsigned(u),
                (None, Some(i), _) => Unexpected::Signed(i),
                (None, None, Some(f)) => Unexpected::Float(f),
                (None, None, None) => Unexpected::Other("number"),
            },
            serde_json::Value::Array(_) => Unexpected::Seq,
            serde_json::Value::Object(_) => Unexpected::Map,
            serde_json::Value::String(_) => Unexpected::Other("string"),
        };
        Err(serde::de::Error::invalid_type(unexpected, &"a string"))
    }
}

impl ObservedChild {
    /// The last-applied configuration, if Metacontroller stored one (unescaped on each call).
    #[must_use]
    pub fn last_applied(&self) -> Option<String> {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.last_applied.as_ref())
            .filter(|s| !s.is_empty())
            .and_then(RawString::text)
    }

    /// Whether the workload's controller has acted on its current generation.
    #[must_use]
    pub fn seen(&self) -> bool {
        let observed = self.status.observed_generation;
        self.metadata
            .generation
            .is_some_and(|g| observed.is_some_and(|o| o >= g))
    }

    /// Whether every pod of the workload runs its current template: its controller has seen
    /// the current generation, every replica of its spec is updated and no pod of another
    /// template is left ([`ChildStatus::all_updated`]), and (a StatefulSet) the update revision
    /// is the current one.
    ///
    /// The one answer to "has the workload rolled out": [`ObservedChild::settled`] and the
    /// `Progressing` condition build on it.
    #[must_use]
    pub fn rolled_out(&self) -> bool {
        let s = &self.status;
        self.seen()
            && s.all_updated(self.spec.replicas.unwrap_or(1))
            && s.current_revision == s.update_revision
    }

    /// Whether the workload runs `replicas` ready pods of its latest spec: it has rolled out
    /// ([`ObservedChild::rolled_out`]) at a size of `replicas` and every pod is ready. Zero
    /// replicas settle at once.
    #[must_use]
    pub fn settled(&self, replicas: i32) -> bool {
        self.rolled_out()
            && self.spec.replicas.unwrap_or(1) == replicas
            && self.status.ready_replicas.unwrap_or(0) == replicas
    }
}

/// The part of a child's spec the hook reads: a workload's `spec.replicas`, memcached's
/// arguments and a StatefulSet's volume claim templates ([`super::pods`]). The rest is skipped;
/// the one path that repeats a whole observed spec (the old workload of a switch under
/// server-side apply) reads it from the request body (`src/keep/`).
#[derive(Debug, Default, Deserialize)]
pub struct ChildSpec {
    /// `spec.replicas` of a Deployment or StatefulSet.
    #[serde(default)]
    pub replicas: Option<i32>,
    /// The pod template's containers (names and arguments).
    #[serde(default)]
    pub template: Option<super::pods::ObservedTemplate>,
    /// A StatefulSet's `volumeClaimTemplates`.
    #[serde(default, rename = "volumeClaimTemplates")]
    pub volume_claim_templates: Option<Vec<super::pods::ObservedClaim>>,
    /// A PodDisruptionBudget's `maxUnavailable`.
    #[serde(default, rename = "maxUnavailable")]
    pub max_unavailable: Option<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
}

/// The parts of a child's status the hook reads (rollout counters of a Deployment or a
/// StatefulSet, the health counts of a PodDisruptionBudget).
#[derive(Debug, Default, Deserialize, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct ChildStatus {
    /// Pods of the workload.
    pub replicas: Option<i32>,
    /// Ready pods.
    pub ready_replicas: Option<i32>,
    /// Pods of the current template.
    pub updated_replicas: Option<i32>,
    /// The generation the workload's controller last acted on.
    pub observed_generation: Option<i64>,
    /// StatefulSet: the revision of the pods not yet updated.
    pub current_revision: Option<String>,
    /// StatefulSet: the revision being rolled out.
    pub update_revision: Option<String>,
    /// PodDisruptionBudget: how many pods it let go that have not gone yet
    /// (`status.disruptedPods`, a map of pod names).
    #[serde(deserialize_with = "count_entries")]
    pub disrupted_pods: usize,
    /// PodDisruptionBudget: its healthy pods.
    pub current_healthy: Option<i32>,
    /// PodDisruptionBudget: the pods it covers.
    pub expected_pods: Option<i32>,
}

impl ChildStatus {
    /// Whether the workload's counters show exactly `replicas` pods, all of its current
    /// template (absent counters count 0).
    #[must_use]
    pub fn all_updated(&self, replicas: i32) -> bool {
        self.replicas.unwrap_or(0) == replicas && self.updated_replicas.unwrap_or(0) == replicas
    }
}

/// The number of entries of a map (`null` or absent: none); the entries are skipped.
fn count_entries<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    deserializer.deserialize_option(CountEntries)
}

/// Counts a map's entries without keeping them.
struct CountEntries;

impl<'de> Visitor<'de> for CountEntries {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let mut count = 0;
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
            count += 1;
        }
        Ok(count)
    }
}
