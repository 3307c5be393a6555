//! `spec.monitoring`: the Prometheus exporter sidecar and the ServiceMonitor.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds;
use super::check::{self, Out, Violation};
use super::pod::{self, MapKind};

/// Default exporter image.
pub const DEFAULT_EXPORTER_IMAGE: &str = "prom/memcached-exporter:v0.15.4";
/// Default ServiceMonitor scrape interval.
pub const DEFAULT_SCRAPE_INTERVAL: &str = "30s";
/// Default ServiceMonitor scrape timeout.
pub const DEFAULT_SCRAPE_TIMEOUT: &str = "10s";
/// A Prometheus duration (`serviceMonitor.interval`, `serviceMonitor.scrapeTimeout`).
pub const DURATION_LENGTH: usize = 64;

/// Monitoring settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringSpec {
    /// Add the Prometheus exporter sidecar and the Service `metrics` port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Exporter image. Absent: the hook's default exporter image (its `--default-exporter-image`,
    /// `prom/memcached-exporter:v0.15.4` unless the install sets a mirror).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = bounds::IMAGE_LENGTH))]
    pub exporter_image: Option<String>,
    /// Compute resources of the exporter container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exporter_resources: Option<ResourceRequirements>,
    /// ServiceMonitor settings; its presence (with `enabled`) emits a ServiceMonitor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_monitor: Option<ServiceMonitorSpec>,
}

/// ServiceMonitor settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMonitorSpec {
    /// Extra labels on the ServiceMonitor (the standard labels win on conflicts; Metacontroller's
    /// `controller-uid` cannot be set here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pod::metacontroller_labels_schema")]
    pub additional_labels: Option<BTreeMap<String, String>>,
    /// Scrape interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = DURATION_LENGTH),
        extend("default" = DEFAULT_SCRAPE_INTERVAL)
    )]
    pub interval: Option<String>,
    /// Scrape timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = DURATION_LENGTH), extend("default" = DEFAULT_SCRAPE_TIMEOUT))]
    pub scrape_timeout: Option<String>,
}

/// Monitoring, when enabled, with every default applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Monitoring<'a> {
    /// Exporter image.
    pub exporter_image: &'a str,
    /// Exporter resources.
    pub exporter_resources: Option<&'a ResourceRequirements>,
    /// ServiceMonitor, when `serviceMonitor` is present.
    pub service_monitor: Option<ServiceMonitor<'a>>,
}

/// ServiceMonitor settings with every default applied.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceMonitor<'a> {
    /// Extra labels (never an empty map).
    pub additional_labels: Option<&'a BTreeMap<String, String>>,
    /// Scrape interval.
    pub interval: &'a str,
    /// Scrape timeout.
    pub scrape_timeout: &'a str,
}

fn non_empty<'a>(value: Option<&'a str>, default: &'a str) -> &'a str {
    value.filter(|v| !v.is_empty()).unwrap_or(default)
}

impl<'a> Monitoring<'a> {
    /// Resolves the defaults of `spec.monitoring`, with `default_image` when it names no
    /// exporter image; `None` unless it is enabled.
    #[must_use]
    pub fn of(monitoring: Option<&'a MonitoringSpec>, default_image: &'a str) -> Option<Self> {
        let m = monitoring.filter(|m| m.enabled == Some(true))?;
        Some(Self {
            exporter_image: m.exporter_image.as_deref().unwrap_or(default_image),
            exporter_resources: m.exporter_resources.as_ref(),
            service_monitor: m.service_monitor.as_ref().map(|s| ServiceMonitor {
                additional_labels: s.additional_labels.as_ref().filter(|l| !l.is_empty()),
                interval: non_empty(s.interval.as_deref(), DEFAULT_SCRAPE_INTERVAL),
                scrape_timeout: non_empty(s.scrape_timeout.as_deref(), DEFAULT_SCRAPE_TIMEOUT),
            }),
        })
    }
}

/// The schema rules of `spec.monitoring`.
pub(super) fn validate(out: &mut Out, m: &MonitoringSpec) {
    let resources = m.exporter_resources.as_ref();
    check::resources(out, "spec.monitoring.exporterResources", resources);
    let image = m.exporter_image.as_deref();
    if m.enabled == Some(true) && image == Some("") {
        let detail = "exporterImage must not be empty";
        out.push(Violation::required("spec.monitoring.exporterImage", detail));
    }
    check::image(out, "spec.monitoring.exporterImage", image);
    if let Some(sm) = &m.service_monitor {
        let field = |name: &str| format!("spec.monitoring.serviceMonitor.{name}");
        let labels = sm.additional_labels.as_ref();
        let labels_field = field("additionalLabels");
        check::map(out, &labels_field, labels, bounds::LABEL_VALUE_LENGTH);
        let (kind, own) = (MapKind::Labels, pod::metacontroller_label);
        pod::check_entries(out, &labels_field, labels, kind, own);
        for (name, value) in [
            ("interval", &sm.interval),
            ("scrapeTimeout", &sm.scrape_timeout),
        ] {
            check::length(out, &field(name), value.as_deref(), DURATION_LENGTH);
        }
    }
}
