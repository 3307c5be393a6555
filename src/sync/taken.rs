//! Children whose names are taken: an object of the child's kind and name already exists in the
//! namespace and is not the Memcached's, so Metacontroller cannot create the child (it only logs
//! "already exists"). The customize hook asks for objects of the children's names while the
//! Memcached is not settled ([`rules`]); the sync compares them with what it answers ([`taken`]).

use std::collections::BTreeMap;

use crate::api::{GROUP, KIND};
use crate::children::ChildKind;
use crate::hook::{Child, ResourceRule, SyncRequest};
use crate::status::Taken;

/// The kind and name of a built child (`None` for one kept as observed).
fn identity(child: &Child) -> Option<(ChildKind, &str)> {
    let (kind, meta) = match child {
        Child::Deployment(o) => (ChildKind::Deployment, &o.metadata),
        Child::StatefulSet(o) => (ChildKind::StatefulSet, &o.metadata),
        Child::Service(o) => (ChildKind::Service, &o.metadata),
        Child::PodDisruptionBudget(o) => (ChildKind::PodDisruptionBudget, &o.metadata),
        Child::HorizontalPodAutoscaler(o) => (ChildKind::HorizontalPodAutoscaler, &o.metadata),
        Child::ServiceMonitor(o) => (ChildKind::ServiceMonitor, &o.metadata),
        Child::NetworkPolicy(o) => (ChildKind::NetworkPolicy, &o.metadata),
        Child::ConfigMap(o) => (ChildKind::ConfigMap, &o.metadata),
        Child::ServiceAccount(o) => (ChildKind::ServiceAccount, &o.metadata),
        Child::RoleBinding(o) => (ChildKind::RoleBinding, &o.metadata),
        Child::Kept(_) => return None,
    };
    Some((kind, meta.name.as_deref()?))
}

/// One related-resource rule per kind of `children`, naming them, in the parent's `namespace`.
pub(super) fn rules(children: &[Child], namespace: Option<&str>) -> Vec<ResourceRule> {
    let mut names: BTreeMap<ChildKind, Vec<String>> = BTreeMap::new();
    for (kind, name) in children.iter().filter_map(identity) {
        names.entry(kind).or_default().push(name.to_owned());
    }
    names
        .into_iter()
        .map(|(kind, mut names)| {
            names.sort_unstable();
            names.dedup();
            ResourceRule {
                api_version: kind.api_version(),
                resource: kind.resource(),
                namespace: namespace.map(str::to_owned),
                names,
                label_selector: None,
            }
        })
        .collect()
}

/// The `children` this sync answers that Metacontroller cannot create: not observed as the
/// Memcached's, while a related object of the same kind and name exists that another controller
/// (or none) owns. In answer order.
pub(super) fn taken(children: &[Child], req: &SyncRequest) -> Vec<Taken> {
    if req.related.is_empty() {
        return Vec::new();
    }
    let parent = &req.parent.metadata;
    let namespace = parent.namespace.as_deref();
    let same_namespace = |ns: Option<&str>| ns.is_none() || ns == namespace;
    let mut out = Vec::new();
    for (kind, name) in children.iter().filter_map(identity) {
        let same = |api_version: &str, k: &str, n: &str| {
            api_version == kind.api_version() && k == kind.kind() && n == name
        };
        let observed = req.children.iter().any(|c| {
            same(&c.api_version, &c.kind, &c.metadata.name)
                && same_namespace(c.metadata.namespace.as_deref())
        });
        if observed {
            continue;
        }
        let Some(other) = req.related.iter().find(|o| {
            same(&o.api_version, &o.kind, &o.metadata.name)
                && same_namespace(o.metadata.namespace.as_deref())
        }) else {
            continue;
        };
        let controller = other.metadata.controller();
        // The Memcached's own child, created but not observed yet.
        let ours = controller.is_some_and(|c| {
            c.kind == KIND
                && c.api_version.split('/').next() == Some(GROUP)
                && c.name == parent.name
        });
        if ours {
            continue;
        }
        out.push(Taken {
            kind: kind.kind(),
            name: name.to_owned(),
            controller: controller.map(|c| format!("{} {}", c.kind, c.name)),
        });
    }
    out
}
