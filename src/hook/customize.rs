//! The customize hook: which related objects Metacontroller should send with each sync.

use serde::{Deserialize, Serialize};

use super::Parent;

/// The body of a customize call (the controller is not read).
#[derive(Debug, Deserialize)]
pub struct CustomizeRequest {
    /// The parent Memcached.
    pub parent: Parent,
}

/// One rule naming related objects.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRule {
    /// `v1`.
    pub api_version: &'static str,
    /// `secrets`.
    pub resource: &'static str,
    /// The parent's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Object names, sorted and de-duplicated.
    pub names: Vec<String>,
}

/// The answer to a customize call.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CustomizeResponse {
    /// Related-resource rules; empty when no Secret is referenced.
    pub related_resources: Vec<ResourceRule>,
}
