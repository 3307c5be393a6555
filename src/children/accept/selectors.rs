//! The parts of the Kubernetes types copied verbatim into a child whose syntax the CRD's schema
//! cannot express and the API server checks: label selectors (topology spread constraints,
//! affinity terms, NetworkPolicy peers), node selector requirements, topology keys and
//! tolerations. Mirrors apimachinery's `ValidateLabelSelector` and core's `validateTolerations`,
//! `validateNodeSelectorTerm` and `validateTopologySpreadConstraints` for these parts.

use k8s_openapi::api::core::v1::{
    Affinity, NodeSelectorRequirement, PodAffinityTerm, PodSpec, Toleration,
};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::api::apiserver::{is_label_value, is_qualified_name};
use crate::api::validation::{Violation, quoted};

type Out = Vec<Violation>;

const KEY: &str = "must be a qualified name";
const VALUE: &str = "must be a label value";

/// A label selector: keys qualified names, values label values, operators and their values.
fn selector(out: &mut Out, field: &str, selector: &LabelSelector) {
    for (key, value) in selector.match_labels.iter().flatten() {
        let field = format!("{field}.matchLabels");
        if !is_qualified_name(key) {
            out.push(Violation::invalid(field, quoted(key), KEY));
        } else if !is_label_value(value) {
            out.push(Violation::invalid(
                format!("{field}.{key}"),
                quoted(value),
                VALUE,
            ));
        }
    }
    for (i, r) in selector.match_expressions.iter().flatten().enumerate() {
        let field = format!("{field}.matchExpressions[{i}]");
        let values = r.values.as_deref().unwrap_or_default();
        requirement(out, &field, (&r.key, &r.operator, values), false);
    }
}

/// One requirement `(key, operator, values)` of a label selector or, with `node`, of a node
/// selector term (which also has `Gt` and `Lt`, each with one integer value).
fn requirement(out: &mut Out, field: &str, (key, op, values): (&str, &str, &[String]), node: bool) {
    if !is_qualified_name(key) {
        out.push(Violation::invalid(format!("{field}.key"), quoted(key), KEY));
    }
    let detail = match op {
        "In" | "NotIn" if values.is_empty() => {
            "must be specified when `operator` is 'In' or 'NotIn'"
        }
        "Exists" | "DoesNotExist" if !values.is_empty() => {
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        }
        "Gt" | "Lt" if node && (values.len() != 1 || values[0].parse::<i64>().is_err()) => {
            "must be one integer when `operator` is 'Lt' or 'Gt'"
        }
        "In" | "NotIn" | "Exists" | "DoesNotExist" => "",
        "Gt" | "Lt" if node => "",
        other => {
            let field = format!("{field}.operator");
            out.push(Violation::invalid(
                field,
                quoted(other),
                "not a valid selector operator",
            ));
            return;
        }
    };
    if !detail.is_empty() {
        out.push(Violation::required(format!("{field}.values"), detail));
    }
    if !node && let Some(bad) = values.iter().find(|v| !is_label_value(v)) {
        out.push(Violation::invalid(
            format!("{field}.values"),
            quoted(bad),
            VALUE,
        ));
    }
}

/// A topology key: required, a qualified name.
fn topology_key(out: &mut Out, field: &str, key: &str) {
    let field = format!("{field}.topologyKey");
    if key.is_empty() {
        out.push(Violation::required(field, "can not be empty"));
    } else if !is_qualified_name(key) {
        out.push(Violation::invalid(field, quoted(key), KEY));
    }
}

fn pod_affinity_term(out: &mut Out, field: &str, term: &PodAffinityTerm) {
    topology_key(out, field, &term.topology_key);
    for (name, s) in [
        ("labelSelector", &term.label_selector),
        ("namespaceSelector", &term.namespace_selector),
    ] {
        if let Some(s) = s {
            selector(out, &format!("{field}.{name}"), s);
        }
    }
}

fn node_requirements(out: &mut Out, field: &str, list: Option<&Vec<NodeSelectorRequirement>>) {
    for (i, r) in list.into_iter().flatten().enumerate() {
        let values = r.values.as_deref().unwrap_or_default();
        let field = format!("{field}[{i}]");
        requirement(out, &field, (&r.key, &r.operator, values), true);
    }
}

fn affinity(out: &mut Out, field: &str, a: &Affinity) {
    if let Some(node) = &a.node_affinity {
        let required = node
            .required_during_scheduling_ignored_during_execution
            .iter()
            .flat_map(|r| r.node_selector_terms.iter());
        let preferred = node
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .map(|p| &p.preference);
        for (i, term) in required.chain(preferred).enumerate() {
            let field = format!("{field}.nodeAffinity.terms[{i}]");
            node_requirements(
                out,
                &format!("{field}.matchExpressions"),
                term.match_expressions.as_ref(),
            );
        }
    }
    for (name, terms) in [
        (
            "podAffinity",
            a.pod_affinity.as_ref().map(|p| {
                (
                    &p.required_during_scheduling_ignored_during_execution,
                    &p.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
        (
            "podAntiAffinity",
            a.pod_anti_affinity.as_ref().map(|p| {
                (
                    &p.required_during_scheduling_ignored_during_execution,
                    &p.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
    ] {
        let Some((required, preferred)) = terms else {
            continue;
        };
        let preferred = preferred.iter().flatten().map(|w| &w.pod_affinity_term);
        for (i, term) in required.iter().flatten().chain(preferred).enumerate() {
            pod_affinity_term(out, &format!("{field}.{name}.terms[{i}]"), term);
        }
    }
}

fn toleration(out: &mut Out, field: &str, t: &Toleration) {
    let key = t.key.as_deref().unwrap_or_default();
    let op = t.operator.as_deref().unwrap_or_default();
    let value = t.value.as_deref().unwrap_or_default();
    let effect = t.effect.as_deref().unwrap_or_default();
    if !key.is_empty() && !is_qualified_name(key) {
        out.push(Violation::invalid(format!("{field}.key"), quoted(key), KEY));
    }
    let op_detail = match op {
        "Exists" if !value.is_empty() => "value must be empty when `operator` is 'Exists'",
        "Equal" | "" if key.is_empty() => "operator must be Exists when `key` is empty",
        "Exists" | "Equal" | "" => "",
        _ => "must be 'Exists' or 'Equal'",
    };
    if !op_detail.is_empty() {
        out.push(Violation::invalid(
            format!("{field}.operator"),
            quoted(op),
            op_detail,
        ));
    }
    if !matches!(effect, "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        let detail = "must be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'";
        out.push(Violation::invalid(
            format!("{field}.effect"),
            quoted(effect),
            detail,
        ));
    } else if t.toleration_seconds.is_some() && effect != "NoExecute" {
        let detail = "effect must be 'NoExecute' when `tolerationSeconds` is set";
        out.push(Violation::invalid(
            format!("{field}.effect"),
            quoted(effect),
            detail,
        ));
    }
}

/// The pod spec's affinity, topology spread constraints and tolerations.
pub(super) fn pod_spec(out: &mut Out, field: &str, spec: &PodSpec) {
    if let Some(a) = &spec.affinity {
        affinity(out, &format!("{field}.affinity"), a);
    }
    for (i, c) in spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .enumerate()
    {
        let field = format!("{field}.topologySpreadConstraints[{i}]");
        topology_key(out, &field, &c.topology_key);
        if let Some(s) = &c.label_selector {
            selector(out, &format!("{field}.labelSelector"), s);
        }
    }
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        toleration(out, &format!("{field}.tolerations[{i}]"), t);
    }
}

/// The selectors of a NetworkPolicy's peers and its own pod selector.
pub(super) fn network_policy(out: &mut Out, field: &str, policy: &NetworkPolicy) {
    let Some(spec) = &policy.spec else { return };
    if let Some(pods) = &spec.pod_selector {
        selector(out, &format!("{field}.spec.podSelector"), pods);
    }
    for (i, rule) in spec.ingress.iter().flatten().enumerate() {
        for (j, peer) in rule.from.iter().flatten().enumerate() {
            let field = format!("{field}.spec.ingress[{i}].from[{j}]");
            for (name, s) in [
                ("podSelector", &peer.pod_selector),
                ("namespaceSelector", &peer.namespace_selector),
            ] {
                if let Some(s) = s {
                    selector(out, &format!("{field}.{name}"), s);
                }
            }
        }
    }
}
