//! The Prometheus Operator ServiceMonitors scraping the exporters, the cache's and the proxy's
//! (its type: `src/hook/service_monitor.rs`).

use std::collections::BTreeMap;

use k8s_openapi::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::labels;
use super::ports::METRICS;
use crate::api::monitoring::ServiceMonitor as Settings;
use crate::hook::service_monitor::{
    Endpoint, NamespaceSelector, ServiceMonitor, ServiceMonitorSpec,
};

/// The desired ServiceMonitor named `name` in `namespace`: additional labels overlaid by the
/// base labels (which win), selecting the Service's `metrics` port.
#[must_use]
pub fn build(name: &str, namespace: &str, settings: &Settings<'_>) -> ServiceMonitor {
    selecting(name, namespace, labels::base(name), settings)
}

/// The ServiceMonitor `name` in `namespace` scraping the `metrics` port of the Services labelled
/// `own`: labelled the same, over the additional labels.
#[must_use]
pub fn selecting(
    name: &str,
    namespace: &str,
    own: BTreeMap<String, String>,
    settings: &Settings<'_>,
) -> ServiceMonitor {
    let mut monitor_labels: BTreeMap<String, String> =
        settings.additional_labels.cloned().unwrap_or_default();
    monitor_labels.extend(own.clone());
    ServiceMonitor {
        api_version: <ServiceMonitor as Resource>::API_VERSION,
        kind: <ServiceMonitor as Resource>::KIND,
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(monitor_labels),
            ..ObjectMeta::default()
        },
        spec: ServiceMonitorSpec {
            selector: LabelSelector {
                match_labels: Some(own),
                match_expressions: None,
            },
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
