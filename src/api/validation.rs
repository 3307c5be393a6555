//! The rules a Memcached must satisfy: the CRD's schema bounds, enums and patterns, the lengths
//! and sizes of its free-form strings, lists and maps, the cross-field rules the CRD carries as
//! CEL, and what the hook adds (DNS-1035 name, non-empty image, `maxReplicas` with autoscaling,
//! well-formed quantities and budgets, the total size of the Service annotations). Each block's
//! module holds its rules; this runs them in a fixed order: every block's field rules, then
//! every block's cross-field rules.
//!
//! The hook re-checks all of them because an object stored before a rule existed must not break
//! a running cache (docs/behaviour.md). Violations read like the API server's field errors, and
//! a summary lists at most 32 of them, so the status stays small whatever the spec.

use super::command_line;
use super::effective::Effective;
use super::security;
use super::{
    MemcachedSpec, autoscaling, child_metadata, extstore, high_availability, memcached, monitoring,
};
use super::{pod, proxy, service, spec, warm_restart, zones};

pub(crate) use super::check::quoted;
pub use super::check::{Reason, Violation};

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

/// Every rule the Memcached named `name` breaks, in a fixed order.
#[must_use]
pub fn validate(name: &str, spec: &MemcachedSpec) -> Vec<Violation> {
    validate_effective(name, spec, &Effective::of(spec))
}

/// [`validate`] with the effective spec already resolved (`effective` must be `spec`'s).
#[must_use]
pub fn validate_effective(name: &str, spec: &MemcachedSpec, e: &Effective<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    let line = command_line::read(e.memcached.extra_args);
    spec::validate(&mut out, name, spec);
    if let Some(c) = &spec.memcached {
        memcached::validate(&mut out, c);
    }
    memcached::validate_args(&mut out, &line);
    if let Some(ha) = &spec.high_availability {
        high_availability::validate(&mut out, ha);
    }
    if let Some(m) = &spec.monitoring {
        monitoring::validate(&mut out, m);
    }
    if let Some(s) = &spec.security {
        security::validate(&mut out, s);
    }
    if let Some(a) = &spec.autoscaling {
        autoscaling::validate(&mut out, a);
    }
    if let Some(s) = &spec.service {
        service::validate(&mut out, s);
    }
    if let Some(m) = &spec.child_metadata {
        child_metadata::validate(&mut out, m, spec.service.as_ref());
    }
    if let Some(w) = &spec.warm_restart {
        warm_restart::validate(&mut out, w);
    }
    if let Some(x) = &spec.extstore {
        extstore::validate(&mut out, x);
    }
    if let Some(p) = &spec.proxy {
        proxy::validate(&mut out, p);
    }
    zones::validate(&mut out, name, spec);
    pod::validate(&mut out, spec);
    spec::validate_rules(&mut out, spec, e.memcached.max_memory_mb);
    high_availability::validate_rules(&mut out, &e.high_availability);
    security::validate_rules(&mut out, &e.security, &line);
    warm_restart::validate_rules(&mut out, spec, &line);
    extstore::validate_rules(&mut out, spec, &e.memcached, &line);
    zones::validate_rules(&mut out, spec);
    let around = (
        &e.security,
        e.zones.as_ref(),
        e.autoscaling.is_some(),
        e.replicas,
    );
    proxy::validate_rules(&mut out, (name, spec), around, e.proxy.is_some());
    if let Some(a) = &e.autoscaling {
        autoscaling::validate_rules(&mut out, a, spec);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_key_rule_says_the_key_bound() {
        let bound = super::super::bounds::KEY_LENGTH.to_string();
        assert!(super::super::bounds::key_rule().ends_with(&format!("<= {bound})")));
        assert!(super::super::bounds::key_message().contains(&bound));
    }
}
