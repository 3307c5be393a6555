//! The customize hook: which related objects Metacontroller should send with each sync.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

use super::{ChildResource, Hook, Parent, null_as_default, strict};

/// The body of a customize call.
#[derive(Debug, Deserialize)]
pub struct CustomizeRequest {
    /// The calling CompositeController: its customize hook's version and child resources.
    #[serde(default, deserialize_with = "controller")]
    pub controller: CustomizeController,
    /// The parent Memcached.
    #[serde(deserialize_with = "strict::deserialize")]
    pub parent: Parent,
}

/// Absent or `null` is a controller without hooks, so customize hook API v1.
fn controller<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<CustomizeController, D::Error> {
    strict::deserialize::<D, Option<CustomizeController>>(deserializer)
        .map(Option::unwrap_or_default)
}

/// The CompositeController of a customize call, reduced to the customize hook's version and the
/// declared child resources.
#[derive(Debug, Default, Deserialize)]
pub struct CustomizeController {
    /// `spec` of the CompositeController.
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: CustomizeControllerSpec,
}

/// The part of a CompositeController's spec a customize call reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomizeControllerSpec {
    /// The hooks.
    #[serde(default, deserialize_with = "null_as_default")]
    pub hooks: CustomizeHooks,
    /// The declared child resources: the kinds whose objects of the children's names are asked
    /// for while the Memcached is not settled.
    #[serde(default, deserialize_with = "null_as_default")]
    pub child_resources: Vec<ChildResource>,
}

/// The hook whose calls `/customize` answers.
#[derive(Debug, Default, Deserialize)]
pub struct CustomizeHooks {
    /// `spec.hooks.customize`.
    #[serde(default)]
    pub customize: Option<Hook>,
}

/// One rule naming related objects: by name, or by label selector.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRule {
    /// `v1`, `apps/v1`, ...
    pub api_version: &'static str,
    /// `secrets`, `pods`, or a child's resource.
    pub resource: &'static str,
    /// The parent's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Object names, sorted and de-duplicated (Metacontroller refuses names with a selector).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// The labels the related objects carry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// The answer to a customize call.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CustomizeResponse {
    /// Related-resource rules; empty when nothing is to be related.
    pub related_resources: Vec<ResourceRule>,
}
