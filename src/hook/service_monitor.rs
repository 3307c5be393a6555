//! The Prometheus Operator's ServiceMonitor, the one child kind k8s-openapi has no type for:
//! the few fields the hook writes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::Serialize;

/// `monitoring.coreos.com/v1` ServiceMonitor.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMonitor {
    /// `monitoring.coreos.com/v1`.
    pub api_version: &'static str,
    /// `ServiceMonitor`.
    pub kind: &'static str,
    /// Name and labels.
    pub metadata: ObjectMeta,
    /// What to scrape.
    pub spec: ServiceMonitorSpec,
}

impl k8s_openapi::Resource for ServiceMonitor {
    const API_VERSION: &'static str = "monitoring.coreos.com/v1";
    const GROUP: &'static str = "monitoring.coreos.com";
    const KIND: &'static str = "ServiceMonitor";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "servicemonitors";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

/// ServiceMonitor spec.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMonitorSpec {
    /// Services to scrape.
    pub selector: LabelSelector,
    /// Namespaces of those Services.
    pub namespace_selector: NamespaceSelector,
    /// Endpoints to scrape.
    pub endpoints: Vec<Endpoint>,
}

/// Namespaces by name.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// Namespace names.
    pub match_names: Vec<String>,
}

/// One scrape endpoint.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// Service port name.
    pub port: &'static str,
    /// Scrape interval.
    pub interval: String,
    /// Scrape timeout.
    pub scrape_timeout: String,
}
