//! Observed children and related objects, collected by value from Metacontroller's nested maps.
//!
//! Both levels refuse a repeated key (`duplicate key "cache"`, at `children.Service.v1`): the
//! API server never sends one, and two objects under one key would both be collected. The
//! objects themselves are decoded through the same check ([`super::strict`]), so their metadata
//! and a related Secret's `data` refuse repeated keys too; what [`ObservedChild`] and
//! [`RelatedObject`] skip (`managedFields`, pod templates, labels, other annotations) is not
//! looked at.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

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
    /// Name, namespace and the last-applied annotation.
    pub metadata: ChildMeta,
    /// `spec.replicas` of a Deployment.
    #[serde(default)]
    pub spec: ChildSpec,
    /// Rollout counters of a Deployment.
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
    /// Annotations the hook reads.
    #[serde(default)]
    pub annotations: Option<ChildAnnotations>,
}

/// Child annotations the hook reads.
#[derive(Debug, Default, Deserialize)]
pub struct ChildAnnotations {
    /// What this hook desired last time (Metacontroller's dynamic apply stores it).
    #[serde(rename = "metacontroller.k8s.io/last-applied-configuration", default)]
    pub last_applied: Option<String>,
}

impl ObservedChild {
    /// The last-applied configuration, if Metacontroller stored one.
    #[must_use]
    pub fn last_applied(&self) -> Option<&str> {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.last_applied.as_deref())
            .filter(|s| !s.is_empty())
    }
}

/// The parts of a child's spec the hook reads (only a Deployment has them).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ChildSpec {
    /// Deployment `spec.replicas`.
    pub replicas: Option<i32>,
}

/// The parts of a child's status the hook reads (Deployment rollout counters).
#[derive(Debug, Default, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct ChildStatus {
    /// Pods of the Deployment.
    pub replicas: Option<i32>,
    /// Ready pods.
    pub ready_replicas: Option<i32>,
    /// Pods of the current template.
    pub updated_replicas: Option<i32>,
}

/// A related object from the customize hook (a Secret): identity and data.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedObject {
    /// e.g. `v1`.
    pub api_version: String,
    /// e.g. `Secret`.
    pub kind: String,
    /// Name and namespace.
    pub metadata: ChildMeta,
    /// Base64-encoded data of a Secret.
    #[serde(default)]
    pub data: Option<BTreeMap<String, String>>,
}
