//! The parts of the Kubernetes types copied verbatim into a child whose syntax the CRD's schema
//! cannot express and the API server checks: label selectors (topology spread constraints,
//! affinity terms, NetworkPolicy peers), node selector requirements, topology keys and
//! tolerations. Mirrors apimachinery's `ValidateLabelSelector` and core's `validateTolerations`,
//! `validateNodeSelectorTerm` and `validateTopologySpreadConstraints` for these parts.

use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, PodAffinityTerm, PodSpec, Toleration};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::Path;
use crate::api::apiserver::{is_label_value, is_qualified_name};
use crate::api::validation::{Violation, quoted};

type Out = Vec<Violation>;

const KEY: &str = "must be a qualified name";
const VALUE: &str = "must be a label value";

/// A label selector: keys qualified names, values label values, operators and their values.
fn selector(out: &mut Out, at: &Path<'_>, selector: &LabelSelector) {
    for (key, value) in selector.match_labels.iter().flatten() {
        let labels = at.at("matchLabels");
        if !is_qualified_name(key) {
            out.push(Violation::invalid(labels.to_string(), quoted(key), KEY));
        } else if !is_label_value(value) {
            let field = labels.at(key).to_string();
            out.push(Violation::invalid(field, quoted(value), VALUE));
        }
    }
    let expressions = at.at("matchExpressions");
    for (i, r) in selector.match_expressions.iter().flatten().enumerate() {
        let values = r.values.as_deref().unwrap_or_default();
        let req = (r.key.as_str(), r.operator.as_str(), values);
        requirement(out, &expressions.index(i), req, false);
    }
}

/// One requirement `(key, operator, values)` of a label selector or, with `node`, of a node
/// selector term (which also has `Gt` and `Lt`, each with one integer value).
fn requirement(
    out: &mut Out,
    at: &Path<'_>,
    (key, op, values): (&str, &str, &[String]),
    node: bool,
) {
    if !is_qualified_name(key) {
        out.push(Violation::invalid(
            at.at("key").to_string(),
            quoted(key),
            KEY,
        ));
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
            let field = at.at("operator").to_string();
            out.push(Violation::invalid(
                field,
                quoted(other),
                "not a valid selector operator",
            ));
            return;
        }
    };
    if !detail.is_empty() {
        out.push(Violation::required(at.at("values").to_string(), detail));
    }
    if !node && let Some(bad) = values.iter().find(|v| !is_label_value(v)) {
        out.push(Violation::invalid(
            at.at("values").to_string(),
            quoted(bad),
            VALUE,
        ));
    }
}

/// A topology key: required, a qualified name.
fn topology_key(out: &mut Out, at: &Path<'_>, key: &str) {
    if key.is_empty() {
        let field = at.at("topologyKey").to_string();
        out.push(Violation::required(field, "can not be empty"));
    } else if !is_qualified_name(key) {
        let field = at.at("topologyKey").to_string();
        out.push(Violation::invalid(field, quoted(key), KEY));
    }
}

fn pod_affinity_term(out: &mut Out, at: &Path<'_>, term: &PodAffinityTerm) {
    topology_key(out, at, &term.topology_key);
    for (name, s) in [
        ("labelSelector", &term.label_selector),
        ("namespaceSelector", &term.namespace_selector),
    ] {
        if let Some(s) = s {
            selector(out, &at.at(name), s);
        }
    }
}

fn node_affinity(out: &mut Out, at: &Path<'_>, node: &NodeAffinity) {
    let required = node
        .required_during_scheduling_ignored_during_execution
        .iter()
        .flat_map(|r| r.node_selector_terms.iter());
    let preferred = node
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .flatten()
        .map(|p| &p.preference);
    let terms = at.at("nodeAffinity.terms");
    for (i, term) in required.chain(preferred).enumerate() {
        let term_at = terms.index(i);
        let expressions = term_at.at("matchExpressions");
        for (j, r) in term.match_expressions.iter().flatten().enumerate() {
            let values = r.values.as_deref().unwrap_or_default();
            let req = (r.key.as_str(), r.operator.as_str(), values);
            requirement(out, &expressions.index(j), req, true);
        }
    }
}

fn affinity(out: &mut Out, at: &Path<'_>, a: &Affinity) {
    if let Some(node) = &a.node_affinity {
        node_affinity(out, at, node);
    }
    let pod = a.pod_affinity.as_ref().map(|p| {
        let required = &p.required_during_scheduling_ignored_during_execution;
        (
            required,
            &p.preferred_during_scheduling_ignored_during_execution,
        )
    });
    let anti = a.pod_anti_affinity.as_ref().map(|p| {
        let required = &p.required_during_scheduling_ignored_during_execution;
        (
            required,
            &p.preferred_during_scheduling_ignored_during_execution,
        )
    });
    for (name, terms) in [("podAffinity.terms", pod), ("podAntiAffinity.terms", anti)] {
        let Some((required, preferred)) = terms else {
            continue;
        };
        let preferred = preferred.iter().flatten().map(|w| &w.pod_affinity_term);
        let list = at.at(name);
        for (i, term) in required.iter().flatten().chain(preferred).enumerate() {
            pod_affinity_term(out, &list.index(i), term);
        }
    }
}

fn toleration(out: &mut Out, at: &Path<'_>, t: &Toleration) {
    let key = t.key.as_deref().unwrap_or_default();
    let op = t.operator.as_deref().unwrap_or_default();
    let value = t.value.as_deref().unwrap_or_default();
    let effect = t.effect.as_deref().unwrap_or_default();
    if !key.is_empty() && !is_qualified_name(key) {
        out.push(Violation::invalid(
            at.at("key").to_string(),
            quoted(key),
            KEY,
        ));
    }
    let op_detail = match op {
        "Exists" if !value.is_empty() => "value must be empty when `operator` is 'Exists'",
        "Equal" | "" if key.is_empty() => "operator must be Exists when `key` is empty",
        "Exists" | "Equal" | "" => "",
        _ => "must be 'Exists' or 'Equal'",
    };
    if !op_detail.is_empty() {
        let field = at.at("operator").to_string();
        out.push(Violation::invalid(field, quoted(op), op_detail));
    }
    let effect_detail = if !matches!(effect, "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        "must be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'"
    } else if t.toleration_seconds.is_some() && effect != "NoExecute" {
        "effect must be 'NoExecute' when `tolerationSeconds` is set"
    } else {
        return;
    };
    let field = at.at("effect").to_string();
    out.push(Violation::invalid(field, quoted(effect), effect_detail));
}

/// The pod spec's affinity, topology spread constraints and tolerations.
pub(super) fn pod_spec(out: &mut Out, at: &Path<'_>, spec: &PodSpec) {
    if let Some(a) = &spec.affinity {
        affinity(out, &at.at("affinity"), a);
    }
    let constraints = at.at("topologySpreadConstraints");
    for (i, c) in spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .enumerate()
    {
        let item = constraints.index(i);
        topology_key(out, &item, &c.topology_key);
        if let Some(s) = &c.label_selector {
            selector(out, &item.at("labelSelector"), s);
        }
    }
    let tolerations = at.at("tolerations");
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        toleration(out, &tolerations.index(i), t);
    }
}

/// The selectors of a NetworkPolicy's peers and its own pod selector.
pub(super) fn network_policy(out: &mut Out, at: &Path<'_>, policy: &NetworkPolicy) {
    let Some(spec) = &policy.spec else { return };
    let spec_at = at.at("spec");
    if let Some(pods) = &spec.pod_selector {
        selector(out, &spec_at.at("podSelector"), pods);
    }
    let ingress = spec_at.at("ingress");
    for (i, rule) in spec.ingress.iter().flatten().enumerate() {
        let rule_at = ingress.index(i);
        let from = rule_at.at("from");
        for (j, peer) in rule.from.iter().flatten().enumerate() {
            let peer_at = from.index(j);
            for (name, s) in [
                ("podSelector", &peer.pod_selector),
                ("namespaceSelector", &peer.namespace_selector),
            ] {
                if let Some(s) = s {
                    selector(out, &peer_at.at(name), s);
                }
            }
        }
    }
}
