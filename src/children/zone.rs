//! One zone of `spec.zones` as its children see it: the name of its workload and budget, the
//! label and selector of its pods, and the node affinity that pins them to the zone.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::labels;

/// Pod label naming the zone a pod runs in (and its workload's and budget's selector).
pub const LABEL: &str = crate::api::zones::ZONE_LABEL;

/// A zone: its name and the node label that names a node's zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone<'a> {
    /// The zone, a value of `topology_key`.
    pub name: &'a str,
    /// The node label.
    pub topology_key: &'a str,
}

impl Zone<'_> {
    /// The name of the zone's workload and budget of the Memcached `name`: `<name>-<zone>`.
    #[must_use]
    pub fn child_name(self, name: &str) -> String {
        crate::api::zones::child_name(name, self.name)
    }

    /// The zone label added to `labels`.
    #[must_use]
    pub fn labelled(self, mut labels: BTreeMap<String, String>) -> BTreeMap<String, String> {
        labels.insert(LABEL.to_owned(), self.name.to_owned());
        labels
    }

    /// The selector of the zone's pods of the Memcached `name`: the base labels and the zone.
    #[must_use]
    pub fn selector(self, name: &str) -> LabelSelector {
        LabelSelector {
            match_labels: Some(self.labelled(labels::base(name))),
            match_expressions: None,
        }
    }

    /// `user` (the pod's node affinity without empty parts) with the zone required: the
    /// requirement joins every one of the user's required terms (the terms are alternatives), or
    /// is the one term when the user requires none.
    #[must_use]
    pub fn pin(self, user: Option<NodeAffinity>) -> NodeAffinity {
        let requirement = NodeSelectorRequirement {
            key: self.topology_key.to_owned(),
            operator: "In".to_owned(),
            values: Some(vec![self.name.to_owned()]),
        };
        let mut out = user.unwrap_or_default();
        let required = out
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(NodeSelector::default);
        if required.node_selector_terms.is_empty() {
            required
                .node_selector_terms
                .push(NodeSelectorTerm::default());
        }
        for term in &mut required.node_selector_terms {
            term.match_expressions
                .get_or_insert_with(Vec::new)
                .push(requirement.clone());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZONE: Zone<'static> = Zone {
        name: "zone-a",
        topology_key: "topology.kubernetes.io/zone",
    };

    fn requirement(key: &str, value: &str) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.to_owned(),
            operator: "In".to_owned(),
            values: Some(vec![value.to_owned()]),
        }
    }

    #[test]
    fn the_zone_is_required_alone_or_in_every_user_term() {
        let alone = ZONE.pin(None);
        let terms = alone
            .required_during_scheduling_ignored_during_execution
            .expect("required")
            .node_selector_terms;
        assert_eq!(terms.len(), 1);
        assert_eq!(
            terms[0].match_expressions,
            Some(vec![requirement("topology.kubernetes.io/zone", "zone-a")])
        );
        let user = NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![
                    NodeSelectorTerm {
                        match_expressions: Some(vec![requirement("disk", "ssd")]),
                        match_fields: None,
                    },
                    NodeSelectorTerm {
                        match_expressions: None,
                        match_fields: Some(vec![requirement("metadata.name", "n1")]),
                    },
                ],
            }),
            preferred_during_scheduling_ignored_during_execution: None,
        };
        let pinned = ZONE.pin(Some(user));
        let terms = pinned
            .required_during_scheduling_ignored_during_execution
            .expect("required")
            .node_selector_terms;
        let zone = requirement("topology.kubernetes.io/zone", "zone-a");
        assert_eq!(
            terms[0].match_expressions,
            Some(vec![requirement("disk", "ssd"), zone.clone()])
        );
        assert_eq!(terms[1].match_expressions, Some(vec![zone]));
        assert!(terms[1].match_fields.is_some());
    }

    #[test]
    fn the_selector_selects_one_zone() {
        let selector = ZONE.selector("cache");
        let labels = selector.match_labels.expect("labels");
        assert_eq!(labels[LABEL], "zone-a");
        assert_eq!(labels.len(), 4);
        assert_eq!(ZONE.child_name("cache"), "cache-zone-a");
    }
}
