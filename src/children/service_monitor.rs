//! The Prometheus Operator ServiceMonitor scraping the exporter. Not a k8s-openapi type, so
//! the few fields the hook writes are typed here.

use std::collections::BTreeMap;

use k8s_openapi::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::Serialize;

use super::labels;
use super::ports::METRICS;
use crate::api::monitoring::ServiceMonitor as Settings;

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

/// The desired ServiceMonitor named `name` in `namespace`: additional labels overlaid by the
/// base labels (which win), selecting the Service's `metrics` port.
#[must_use]
pub fn build(name: &str, namespace: &str, settings: &Settings<'_>) -> ServiceMonitor {
    let mut monitor_labels: BTreeMap<String, String> =
        settings.additional_labels.cloned().unwrap_or_default();
    monitor_labels.extend(labels::base(name));
    ServiceMonitor {
        api_version: <ServiceMonitor as Resource>::API_VERSION,
        kind: <ServiceMonitor as Resource>::KIND,
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(monitor_labels),
            ..ObjectMeta::default()
        },
        spec: ServiceMonitorSpec {
            selector: labels::selector(name),
            namespace_selector: NamespaceSelector {
                match_names: vec![namespace.to_owned()],
            },
            endpoints: vec![Endpoint {
                port: METRICS.name,
                interval: settings.interval.to_owned(),
                scrape_timeout: settings.scrape_timeout.to_owned(),
            }],
        },
    }
}
