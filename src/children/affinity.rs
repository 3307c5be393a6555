//! The pod's affinity: the user's node and pod affinity without empty parts, and the pod
//! anti-affinity of the user or of `highAvailability.antiAffinityPreset`.

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, PodAffinity, PodAffinityTerm, PodAntiAffinity, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::labels;
use super::zone::Zone;
use crate::api::AntiAffinityPreset;

/// The node label that spreads pods one per node.
const HOSTNAME_TOPOLOGY_KEY: &str = "kubernetes.io/hostname";

/// `list` unless it is empty (the API server drops an empty list: a diff on every sync).
fn non_empty<T: Clone>(list: Option<&Vec<T>>) -> Option<Vec<T>> {
    list.filter(|l| !l.is_empty()).cloned()
}

/// The user's node affinity without empty parts.
fn node_affinity(user: &NodeAffinity) -> Option<NodeAffinity> {
    let out = NodeAffinity {
        required_during_scheduling_ignored_during_execution: user
            .required_during_scheduling_ignored_during_execution
            .clone()
            .filter(|r| !r.node_selector_terms.is_empty()),
        preferred_during_scheduling_ignored_during_execution: non_empty(
            user.preferred_during_scheduling_ignored_during_execution
                .as_ref(),
        ),
    };
    (out != NodeAffinity::default()).then_some(out)
}

/// The user's pod affinity or anti-affinity (`$kind`: two k8s-openapi types with the same
/// fields) without empty lists; `None` when both lists are empty.
macro_rules! without_empty_terms {
    ($kind:ident, $user:expr) => {{
        let user = $user;
        let required = non_empty(
            user.required_during_scheduling_ignored_during_execution
                .as_ref(),
        );
        let preferred = non_empty(
            user.preferred_during_scheduling_ignored_during_execution
                .as_ref(),
        );
        (required.is_some() || preferred.is_some()).then_some($kind {
            required_during_scheduling_ignored_during_execution: required,
            preferred_during_scheduling_ignored_during_execution: preferred,
        })
    }};
}

/// The pod's affinity: the user's node and pod affinity as given (pinned to the pods' `zone`,
/// if any), and the user's pod anti-affinity when there is one (even `{}`, which means none),
/// else the preset's.
pub(super) fn affinity(
    name: &str,
    preset: Option<AntiAffinityPreset>,
    user: Option<&Affinity>,
    zone: Option<Zone<'_>>,
) -> Option<Affinity> {
    let anti = match user.and_then(|a| a.pod_anti_affinity.as_ref()) {
        Some(own) => without_empty_terms!(PodAntiAffinity, own),
        None => preset_anti_affinity(name, preset),
    };
    let out = Affinity {
        node_affinity: {
            let own = user
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(node_affinity);
            match zone {
                Some(zone) => Some(zone.pin(own)),
                None => own,
            }
        },
        pod_affinity: user
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|own| without_empty_terms!(PodAffinity, own)),
        pod_anti_affinity: anti,
    };
    (out != Affinity::default()).then_some(out)
}

/// The anti-affinity of `highAvailability.antiAffinityPreset`: `soft` prefers, `hard` requires
/// one pod per node (docs/behaviour.md).
fn preset_anti_affinity(name: &str, preset: Option<AntiAffinityPreset>) -> Option<PodAntiAffinity> {
    let term = || PodAffinityTerm {
        topology_key: HOSTNAME_TOPOLOGY_KEY.to_owned(),
        label_selector: Some(LabelSelector {
            match_labels: Some(labels::anti_affinity(name)),
            match_expressions: None,
        }),
        ..PodAffinityTerm::default()
    };
    Some(match preset? {
        AntiAffinityPreset::Soft => PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: term(),
                },
            ]),
            required_during_scheduling_ignored_during_execution: None,
        },
        AntiAffinityPreset::Hard => PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: None,
            required_during_scheduling_ignored_during_execution: Some(vec![term()]),
        },
    })
}
