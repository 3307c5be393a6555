//! The rules a Memcached must satisfy: the CRD's schema bounds, enums and patterns (§a.3), the
//! lengths and sizes of its free-form strings, lists and maps ([`super::spec::bounds`]), the
//! cross-field rules the CRD carries as CEL (spec.md §1.1), and what the hook adds (DNS-1035
//! name, non-empty image, `maxReplicas` with autoscaling, well-formed quantities and budgets, the
//! total size of the Service annotations).
//!
//! The hook re-checks all of them because an object stored before a rule existed must not break
//! a running cache (spec.md §1.4). Violations read like the API server's field errors. A value
//! is repeated only up to 128 characters (an over-long one not at all), a list or map is checked
//! entry by entry only up to its bound, and a summary lists at most 32 violations, so the status
//! stays small whatever the spec.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::MemcachedSpec;
use super::effective::Effective;
use super::quantity::Quantity;
use super::spec::bounds;

/// One broken rule, with the JSON path of the offending field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// JSON path, e.g. `spec.replicas`.
    pub field: String,
    /// The kind of error, as the API server names it.
    pub reason: Reason,
    /// The offending value, rendered (`None` for a missing or an over-long value).
    pub value: Option<String>,
    /// What is wrong.
    pub detail: String,
}

/// The kinds of field error the hook reports, named like the API server's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A value that breaks a rule: `Invalid value`.
    Invalid,
    /// A missing value: `Required value`.
    Required,
    /// A string over its length: `Too long` (the value is not repeated).
    TooLong,
    /// A list or map over its size: `Too many` (with the count).
    TooMany,
}

impl Reason {
    /// The API server's words for it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invalid => "Invalid value",
            Self::Required => "Required value",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
        }
    }
}

impl Violation {
    fn invalid(
        field: impl Into<String>,
        value: impl fmt::Display,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            field: field.into(),
            reason: Reason::Invalid,
            value: Some(value.to_string()),
            detail: detail.into(),
        }
    }

    fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: Reason::Required,
            value: None,
            detail: detail.into(),
        }
    }

    /// A string over `max` characters, worded like the API server's `maxLength` error.
    fn too_long(field: impl Into<String>, max: usize) -> Self {
        Self {
            field: field.into(),
            reason: Reason::TooLong,
            value: None,
            detail: format!("may not be more than {max} bytes"),
        }
    }

    /// A list or map of `count` entries over `max`, worded like the API server's `maxItems`
    /// and `maxProperties` errors.
    fn too_many(field: impl Into<String>, count: usize, max: usize) -> Self {
        Self {
            field: field.into(),
            reason: Reason::TooMany,
            value: Some(count.to_string()),
            detail: format!("must have at most {max} items"),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: ", self.field, self.reason.as_str())?;
        if let Some(value) = &self.value {
            write!(f, "{value}: ")?;
        }
        f.write_str(&self.detail)
    }
}

/// Violations a summary spells out; the rest are counted.
const SUMMARY_LIMIT: usize = 32;

/// Joins violations the way the API server does: one, or `[a, b, ...]`. Past
/// [`SUMMARY_LIMIT`] the rest are counted, not listed, so a status message stays small.
#[must_use]
pub fn summary(violations: &[Violation]) -> String {
    match violations {
        [one] => one.to_string(),
        many => {
            let mut listed: Vec<String> = many
                .iter()
                .take(SUMMARY_LIMIT)
                .map(ToString::to_string)
                .collect();
            if many.len() > SUMMARY_LIMIT {
                listed.push(format!("and {} more", many.len() - SUMMARY_LIMIT));
            }
            format!("[{}]", listed.join(", "))
        }
    }
}

/// Longest value a violation repeats; a longer one is cut (with `...`).
const SHOWN_VALUE_LENGTH: usize = 128;

/// `text` as a JSON string, cut after [`SHOWN_VALUE_LENGTH`] characters.
fn quoted(text: &str) -> String {
    let (shown, cut) = match text.char_indices().nth(SHOWN_VALUE_LENGTH) {
        Some((end, _)) => (&text[..end], "..."),
        None => (text, ""),
    };
    let json = serde_json::to_string(shown).unwrap_or_else(|_| format!("{shown:?}"));
    format!("{json}{cut}")
}

/// Whether `text` has more than `max` characters (what the API server's `maxLength` counts).
pub fn is_too_long(text: &str, max: usize) -> bool {
    text.len() > max && text.chars().count() > max
}

/// `spec.image`-like strings: at most `max` characters.
fn check_length(out: &mut Vec<Violation>, field: &str, value: Option<&str>, max: usize) {
    if value.is_some_and(|v| is_too_long(v, max)) {
        out.push(Violation::too_long(field, max));
    }
}

/// A list of at most `max` entries; returns the entries within the bound, to check one by one.
fn check_items<'a, T>(
    out: &mut Vec<Violation>,
    field: &str,
    items: Option<&'a [T]>,
    max: usize,
) -> &'a [T] {
    let items = items.unwrap_or_default();
    if items.len() > max {
        out.push(Violation::too_many(field, items.len(), max));
        &items[..max]
    } else {
        items
    }
}

/// A label or annotation map: at most [`bounds::MAP_ENTRIES`] entries, keys of at most
/// [`bounds::KEY_LENGTH`] and values of at most `max_value` characters. Keys beyond the bound
/// are not checked one by one (`Too many` covers them).
fn check_map(
    out: &mut Vec<Violation>,
    field: &str,
    map: Option<&BTreeMap<String, String>>,
    max_value: usize,
) {
    let Some(map) = map else { return };
    if map.len() > bounds::MAP_ENTRIES {
        out.push(Violation::too_many(field, map.len(), bounds::MAP_ENTRIES));
    }
    let mut long_key = false;
    for (key, value) in map.iter().take(bounds::MAP_ENTRIES) {
        if is_too_long(key, bounds::KEY_LENGTH) {
            long_key = true;
        } else if is_too_long(value, max_value) {
            out.push(Violation::too_long(format!("{field}.{key}"), max_value));
        }
    }
    if long_key {
        // Worded like the API server's answer to the CRD's CEL rule on the map.
        out.push(Violation::invalid(field, "\"object\"", bounds::KEY_MESSAGE));
    }
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
        Some(IntOrString::String(s)) if is_too_long(s, bounds::BUDGET_LENGTH) => {
            out.push(Violation::too_long(field, bounds::BUDGET_LENGTH));
        }
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
    check_length(
        &mut out,
        "spec.image",
        spec.image.as_deref(),
        bounds::IMAGE_LENGTH,
    );
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
        let item_size = c.max_item_size.as_deref();
        if item_size.is_some_and(|s| is_too_long(s, bounds::ITEM_SIZE_LENGTH)) {
            out.push(Violation::too_long(
                "spec.memcached.maxItemSize",
                bounds::ITEM_SIZE_LENGTH,
            ));
        } else if let Some(size) = item_size.filter(|s| !s.is_empty() && !is_item_size(s)) {
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
        let field = "spec.memcached.extraArgs";
        let args = check_items(&mut out, field, c.extra_args.as_deref(), bounds::EXTRA_ARGS);
        for (index, arg) in args.iter().enumerate() {
            check_length(
                &mut out,
                &format!("{field}[{index}]"),
                Some(arg),
                bounds::EXTRA_ARG_LENGTH,
            );
        }
    }
    if let Some(ha) = &spec.high_availability {
        check_items(
            &mut out,
            "spec.highAvailability.topologySpreadConstraints",
            ha.topology_spread_constraints.as_deref(),
            bounds::TOPOLOGY_SPREAD_CONSTRAINTS,
        );
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
        check_length(
            &mut out,
            "spec.monitoring.exporterImage",
            m.exporter_image.as_deref(),
            bounds::IMAGE_LENGTH,
        );
        if let Some(sm) = &m.service_monitor {
            let field = "spec.monitoring.serviceMonitor";
            check_map(
                &mut out,
                &format!("{field}.additionalLabels"),
                sm.additional_labels.as_ref(),
                bounds::LABEL_VALUE_LENGTH,
            );
            for (name, value) in [
                ("interval", &sm.interval),
                ("scrapeTimeout", &sm.scrape_timeout),
            ] {
                check_length(
                    &mut out,
                    &format!("{field}.{name}"),
                    value.as_deref(),
                    bounds::DURATION_LENGTH,
                );
            }
        }
    }
    if let Some(s) = &spec.security {
        for (block, secret) in [
            (
                "sasl.credentialsSecretRef",
                s.sasl
                    .as_ref()
                    .and_then(|x| x.credentials_secret_ref.as_ref()),
            ),
            (
                "tls.certificateSecretRef",
                s.tls
                    .as_ref()
                    .and_then(|x| x.certificate_secret_ref.as_ref()),
            ),
        ] {
            check_length(
                &mut out,
                &format!("spec.security.{block}.name"),
                secret.and_then(|r| r.name.as_deref()),
                bounds::SECRET_NAME_LENGTH,
            );
        }
        check_items(
            &mut out,
            "spec.security.networkPolicy.allowedSources",
            s.network_policy
                .as_ref()
                .and_then(|n| n.allowed_sources.as_deref()),
            bounds::ALLOWED_SOURCES,
        );
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

    let metrics = check_items(
        &mut out,
        "spec.autoscaling.metrics",
        spec.autoscaling.as_ref().and_then(|a| a.metrics.as_deref()),
        bounds::METRICS,
    );
    for (index, metric) in metrics.iter().enumerate() {
        for (source, target) in crate::children::hpa::targets(metric) {
            for (name, value) in [
                ("value", &target.value),
                ("averageValue", &target.average_value),
            ] {
                if let Some(q) = value
                    && let Err(e) = Quantity::parse(&q.0)
                {
                    let path = format!("spec.autoscaling.metrics[{index}].{source}.target.{name}");
                    out.push(Violation::invalid(path, quoted(&q.0), e.to_string()));
                }
            }
        }
    }

    let annotations = spec.service.as_ref().and_then(|s| s.annotations.as_ref());
    check_map(
        &mut out,
        "spec.service.annotations",
        annotations,
        bounds::ANNOTATION_VALUE_LENGTH,
    );
    let total: usize = annotations
        .into_iter()
        .flatten()
        .map(|(key, value)| key.len() + value.len())
        .sum();
    if total > bounds::ANNOTATIONS_TOTAL {
        out.push(Violation {
            detail: format!(
                "may not be more than {} bytes in total (keys and values), half of what Kubernetes allows: Metacontroller's last-applied-configuration annotation repeats them",
                bounds::ANNOTATIONS_TOTAL
            ),
            ..Violation::too_long("spec.service.annotations", bounds::ANNOTATIONS_TOTAL)
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_when_repeated() {
        assert_eq!(quoted("50 %"), "\"50 %\"");
        let cut = quoted(&"é".repeat(1000));
        assert_eq!(cut, format!("\"{}\"...", "é".repeat(SHOWN_VALUE_LENGTH)));
    }

    #[test]
    fn a_summary_lists_32_violations_and_counts_the_rest() {
        let many: Vec<Violation> = (0..40)
            .map(|i| Violation::too_long(format!("spec.f{i}"), 1))
            .collect();
        let text = summary(&many);
        assert!(text.contains("spec.f31: Too long") && !text.contains("spec.f32:"));
        assert!(text.ends_with(", and 8 more]"), "{text}");
        assert_eq!(
            summary(&many[..1]),
            "spec.f0: Too long: may not be more than 1 bytes"
        );
    }

    #[test]
    fn lengths_count_characters() {
        assert!(!is_too_long(&"é".repeat(63), 63));
        assert!(is_too_long(&"é".repeat(64), 63));
    }

    #[test]
    fn the_key_rule_says_the_key_bound() {
        let bound = bounds::KEY_LENGTH.to_string();
        assert!(bounds::KEY_RULE.ends_with(&format!("<= {bound})")));
        assert!(bounds::KEY_MESSAGE.contains(&bound));
    }
}
