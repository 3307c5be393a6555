//! Why a well-formed request gets no 200 answer.

use thiserror::Error;

use crate::api::validation::{self, Violation};
use crate::api::{GROUP, KIND};

/// Why a well-formed request gets no 200 answer. Each maps to a 4xx: Metacontroller then
/// changes nothing and shows the message as a Warning event.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SyncError {
    /// The parent is not a `memcached.c5c3.io` `Memcached` of a served version.
    #[error("parent is {kind} {api_version}, expected {KIND} {GROUP}/v1beta1 or {GROUP}/v1alpha1")]
    WrongParent {
        /// The parent's `apiVersion`.
        api_version: String,
        /// The parent's `kind`.
        kind: String,
    },
    /// The parent has no `metadata.namespace` (or an empty one): a Memcached is namespaced.
    #[error("parent has no metadata.namespace: a {KIND} is namespaced")]
    NoNamespace,
    /// A switch between workloads has to answer the old workload as observed, but it came
    /// without a spec to repeat.
    #[error("cannot keep the observed {kind} {name} while switching workloads: it has no spec")]
    CannotKeepWorkload {
        /// `Deployment` or `StatefulSet`.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// A zone's workload has to keep its pod template while an earlier zone rolls out, but it
    /// came without one to repeat.
    #[error(
        "cannot hold the {kind} {name} back while an earlier zone rolls out: it has no pod template"
    )]
    CannotHoldZone {
        /// `Deployment` or `StatefulSet`.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// The spec breaks a rule and the observed children cannot be kept as they are.
    #[error("invalid spec ({reason}): {}", validation::summary(.violations))]
    InvalidSpec {
        /// Why the observed children could not be kept.
        reason: &'static str,
        /// Every broken rule.
        violations: Vec<Violation>,
    },
}

impl SyncError {
    /// The JSON path of the field at fault.
    #[must_use]
    pub fn field(&self) -> &str {
        match self {
            Self::WrongParent { .. } => "parent.apiVersion",
            Self::NoNamespace => "parent.metadata.namespace",
            Self::CannotKeepWorkload { .. } | Self::CannotHoldZone { .. } => "children",
            Self::InvalidSpec { violations, .. } => violations
                .first()
                .map_or("parent.spec", |v| v.field.as_str()),
        }
    }
}
