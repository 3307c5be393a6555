//! The rules a Memcached must satisfy: the CRD's schema bounds, enums and patterns (§a.3), the
//! cross-field rules the CRD carries as CEL (spec.md §1.1), and what the hook adds (DNS-1035
//! name, non-empty image, `maxReplicas` with autoscaling, well-formed quantities and budgets).
//!
//! The hook re-checks all of them because an object stored before a rule existed must not break
//! a running cache (spec.md §1.4). Violations read like the API server's field errors.

use std::fmt;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::MemcachedSpec;
use super::effective::Effective;
use super::quantity::Quantity;

/// One broken rule, with the JSON path of the offending field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// JSON path, e.g. `spec.replicas`.
    pub field: String,
    /// The offending value, rendered (`None` for a missing value).
    pub value: Option<String>,
    /// What is wrong.
    pub detail: String,
}

impl Violation {
    fn invalid(
        field: impl Into<String>,
        value: impl fmt::Display,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            field: field.into(),
            value: Some(value.to_string()),
            detail: detail.into(),
        }
    }

    fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(
                f,
                "{}: Invalid value: {}: {}",
                self.field, value, self.detail
            ),
            None => write!(f, "{}: Required value: {}", self.field, self.detail),
        }
    }
}

/// Joins violations the way the API server does: one, or `[a, b, ...]`.
#[must_use]
pub fn summary(violations: &[Violation]) -> String {
    match violations {
        [one] => one.to_string(),
        many => format!(
            "[{}]",
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
}

/// DNS-1035 label: what a Service name must be.
fn is_dns1035_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

fn in_range(
    out: &mut Vec<Violation>,
    field: &str,
    value: Option<i64>,
    min: i64,
    max: i64,
    zero_means_default: bool,
) {
    let Some(v) = value else { return };
    if zero_means_default && v == 0 {
        return;
    }
    if v < min {
        out.push(Violation::invalid(
            field,
            v,
            format!("should be greater than or equal to {min}"),
        ));
    } else if v > max {
        out.push(Violation::invalid(
            field,
            v,
            format!("should be less than or equal to {max}"),
        ));
    }
}

fn check_resources(
    out: &mut Vec<Violation>,
    field: &str,
    resources: Option<&ResourceRequirements>,
) {
    let Some(resources) = resources else { return };
    for (part, list) in [
        ("limits", &resources.limits),
        ("requests", &resources.requests),
    ] {
        for (name, quantity) in list.iter().flatten() {
            let path = format!("{field}.{part}.{name}");
            match Quantity::parse(&quantity.0) {
                Err(e) => out.push(Violation::invalid(path, quoted(&quantity.0), e.to_string())),
                Ok(q) if q.is_negative() => {
                    out.push(Violation::invalid(
                        path,
                        quoted(&quantity.0),
                        "must be greater than or equal to 0",
                    ));
                }
                Ok(_) => {}
            }
        }
    }
}

/// Whether a budget value is an integer >= 0 or a percentage from 0% to 100%.
fn check_budget(out: &mut Vec<Violation>, field: &str, value: Option<&IntOrString>) {
    match value {
        Some(IntOrString::Int(n)) if *n < 0 => {
            out.push(Violation::invalid(
                field,
                n,
                "must be greater than or equal to 0",
            ));
        }
        Some(IntOrString::String(s)) => match parse_percent(s) {
            Some(p) if p <= 100 => {}
            Some(_) => out.push(Violation::invalid(
                field,
                quoted(s),
                "must not be greater than 100%",
            )),
            None => out.push(Violation::invalid(
                field,
                quoted(s),
                "a valid percent string must be a numeric string followed by an ending '%'",
            )),
        },
        _ => {}
    }
}

/// `"50%"` → 50.
#[must_use]
pub fn parse_percent(text: &str) -> Option<u32> {
    let digits = text.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn is_item_size(text: &str) -> bool {
    text.strip_suffix(['k', 'm'])
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Every rule the Memcached named `name` breaks, in a fixed order.
#[must_use]
pub fn validate(name: &str, spec: &MemcachedSpec) -> Vec<Violation> {
    let mut out = Vec::new();
    let effective = Effective::of(spec);
    if !is_dns1035_label(name) {
        out.push(Violation::invalid(
            "metadata.name",
            quoted(name),
            "must be a DNS-1035 label to name the Service: at most 63 characters, lower-case letters, digits and '-', starting with a letter and ending with a letter or digit",
        ));
    }

    // Schema bounds, enums and patterns (§a.3).
    in_range(
        &mut out,
        "spec.replicas",
        spec.replicas.map(i64::from),
        0,
        64,
        false,
    );
    if spec.image.as_deref() == Some("") {
        out.push(Violation::required("spec.image", "image must not be empty"));
    }
    check_resources(&mut out, "spec.resources", spec.resources.as_ref());
    if let Some(c) = &spec.memcached {
        in_range(
            &mut out,
            "spec.memcached.maxMemoryMB",
            c.max_memory_mb.map(i64::from),
            16,
            65536,
            true,
        );
        in_range(
            &mut out,
            "spec.memcached.maxConnections",
            c.max_connections.map(i64::from),
            1,
            65536,
            true,
        );
        in_range(
            &mut out,
            "spec.memcached.threads",
            c.threads.map(i64::from),
            1,
            128,
            true,
        );
        if let Some(size) = c
            .max_item_size
            .as_deref()
            .filter(|s| !s.is_empty() && !is_item_size(s))
        {
            out.push(Violation::invalid(
                "spec.memcached.maxItemSize",
                quoted(size),
                "should match '^[0-9]+(k|m)$'",
            ));
        }
        in_range(
            &mut out,
            "spec.memcached.verbosity",
            c.verbosity.map(i64::from),
            0,
            2,
            false,
        );
    }
    if let Some(ha) = &spec.high_availability {
        if let Some(pdb) = &ha.pod_disruption_budget {
            let field = "spec.highAvailability.podDisruptionBudget";
            check_budget(
                &mut out,
                &format!("{field}.minAvailable"),
                pdb.min_available.as_ref(),
            );
            check_budget(
                &mut out,
                &format!("{field}.maxUnavailable"),
                pdb.max_unavailable.as_ref(),
            );
        }
        if let Some(g) = &ha.graceful_shutdown {
            let field = "spec.highAvailability.gracefulShutdown";
            in_range(
                &mut out,
                &format!("{field}.preStopDelaySeconds"),
                g.pre_stop_delay_seconds.map(i64::from),
                1,
                300,
                true,
            );
            in_range(
                &mut out,
                &format!("{field}.terminationGracePeriodSeconds"),
                g.termination_grace_period_seconds,
                1,
                600,
                true,
            );
        }
    }
    if let Some(m) = &spec.monitoring {
        check_resources(
            &mut out,
            "spec.monitoring.exporterResources",
            m.exporter_resources.as_ref(),
        );
        if m.enabled == Some(true) && m.exporter_image.as_deref() == Some("") {
            out.push(Violation::required(
                "spec.monitoring.exporterImage",
                "exporterImage must not be empty",
            ));
        }
    }
    if let Some(a) = &spec.autoscaling {
        in_range(
            &mut out,
            "spec.autoscaling.minReplicas",
            a.min_replicas.map(i64::from),
            1,
            i64::from(i32::MAX),
            false,
        );
        in_range(
            &mut out,
            "spec.autoscaling.maxReplicas",
            a.max_replicas.map(i64::from),
            1,
            i64::from(i32::MAX),
            false,
        );
    }

    if let Some(metrics) = spec.autoscaling.as_ref().and_then(|a| a.metrics.as_ref()) {
        for (index, metric) in metrics.iter().enumerate() {
            for (source, target) in crate::children::hpa::targets(metric) {
                for (name, value) in [
                    ("value", &target.value),
                    ("averageValue", &target.average_value),
                ] {
                    if let Some(q) = value
                        && let Err(e) = Quantity::parse(&q.0)
                    {
                        let path =
                            format!("spec.autoscaling.metrics[{index}].{source}.target.{name}");
                        out.push(Violation::invalid(path, quoted(&q.0), e.to_string()));
                    }
                }
            }
        }
    }

    // Cross-field rules (the CRD's CEL rules, Part 2 §e.2 without the three PDB rules).
    if let Some(limit) = spec
        .resources
        .as_ref()
        .and_then(|r| r.limits.as_ref())
        .and_then(|l| l.get("memory"))
        && let Ok(q) = Quantity::parse(&limit.0)
    {
        let mb = u128::try_from(effective.max_memory_mb).unwrap_or(0);
        let required = (mb + 32) << 20;
        if q.is_negative() || q.ceil().is_some_and(|bytes| bytes < required) {
            let shown = q.canonical().unwrap_or_else(|_| limit.0.clone());
            let need = Quantity::from_bytes(required)
                .canonical()
                .unwrap_or_default();
            out.push(Violation::invalid(
                "spec.resources.limits.memory",
                quoted(&shown),
                format!(
                    "memory limit must be at least {need} (maxMemoryMB={}Mi + 32Mi overhead)",
                    effective.max_memory_mb
                ),
            ));
        }
    }
    if let Some(g) = effective.graceful_shutdown
        && g.termination_grace_period_seconds <= i64::from(g.pre_stop_delay_seconds)
    {
        out.push(Violation::invalid(
            "spec.highAvailability.gracefulShutdown.terminationGracePeriodSeconds",
            g.termination_grace_period_seconds,
            format!(
                "terminationGracePeriodSeconds ({}) must exceed preStopDelaySeconds ({})",
                g.termination_grace_period_seconds, g.pre_stop_delay_seconds
            ),
        ));
    }
    if effective.sasl_secret == Some("") {
        out.push(Violation::required(
            "spec.security.sasl.credentialsSecretRef.name",
            "credentialsSecretRef.name is required when SASL is enabled",
        ));
    }
    if effective.tls.is_some_and(|t| t.secret_name.is_empty()) {
        out.push(Violation::required(
            "spec.security.tls.certificateSecretRef.name",
            "certificateSecretRef.name is required when TLS is enabled",
        ));
    }
    if let Some(a) = &effective.autoscaling {
        if let Some(replicas) = spec.replicas {
            out.push(Violation::invalid(
                "spec.replicas",
                replicas,
                "spec.replicas and spec.autoscaling.enabled are mutually exclusive",
            ));
        }
        match (a.min_replicas, a.max_replicas) {
            (_, None) => out.push(Violation::required(
                "spec.autoscaling.maxReplicas",
                "maxReplicas is required when autoscaling is enabled",
            )),
            (Some(min), Some(max)) if min > max => out.push(Violation::invalid(
                "spec.autoscaling.minReplicas",
                min,
                format!("minReplicas ({min}) must not exceed maxReplicas ({max})"),
            )),
            _ => {}
        }
        let cpu_utilization = a.metrics.iter().any(|m| {
            m.type_ == "Resource"
                && m.resource
                    .as_ref()
                    .is_some_and(|r| r.name == "cpu" && r.target.type_ == "Utilization")
        });
        let has_cpu_request = spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .is_some_and(|r| r.contains_key("cpu"));
        if cpu_utilization && !has_cpu_request {
            out.push(Violation::required(
                "spec.resources.requests.cpu",
                "resources.requests.cpu is required when using CPU utilization metrics",
            ));
        }
    }
    // Both-set, neither-set and minAvailable >= replicas are valid PDB inputs (spec.md §1.1);
    // the DisruptionBudgetBlocking condition reports a budget that blocks node drains.
    out
}
