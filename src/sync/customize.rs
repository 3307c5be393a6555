//! The customize hook's answer: which related objects Metacontroller sends with each sync.

use k8s_openapi::Resource as _;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::jiff::Timestamp;

use super::{Options, SyncError, check_parent, taken};
use crate::api::effective::Effective;
use crate::api::{Workload, apiserver};
use crate::children::labels;
use crate::hook::{
    Controller, ControllerSpec, CustomizeRequest, CustomizeResponse, Observed, Parent, Received,
    ResourceRule, SyncHooks, SyncRequest,
};
use crate::status::READY;

/// The related objects Metacontroller should send with each sync, in the parent's namespace:
/// the Secrets of the enabled SASL and TLS blocks, and, with [`Options::relate_pods`], the
/// Memcached's pods when they have something to tell: with `warmRestart` on a StatefulSet, how
/// each pod last started (its warm-restart guard); with Secrets reloaded in place, whether each
/// pod's reload agent applied them (its condition on the Pod). While the Memcached is not
/// settled (new, changed, or not Ready), the objects named like the children it is answered
/// with, of each declared kind, so that the sync can tell a child whose name another object
/// holds (`taken`).
///
/// # Errors
/// [`SyncError::WrongParent`] for a parent of another kind or group.
pub fn customize(
    req: &CustomizeRequest,
    options: &Options,
) -> Result<CustomizeResponse, SyncError> {
    check_parent(&req.parent)?;
    let e = Effective::with(&req.parent.spec, options.image_defaults());
    let namespace = &req.parent.metadata.namespace;
    // A name no Secret can have can only come from an invalid spec (the sync answer reports
    // it): asking Metacontroller to watch it would cost a lookup and find nothing.
    let mut names = e.security.secrets();
    names.retain(|name| apiserver::is_dns_subdomain(name));
    let mut related_resources = Vec::new();
    if !names.is_empty() {
        related_resources.push(ResourceRule {
            api_version: Secret::API_VERSION,
            resource: Secret::URL_PATH_SEGMENT,
            namespace: namespace.clone(),
            names: names.into_iter().map(str::to_owned).collect(),
            label_selector: None,
        });
    }
    let warm_starts = e.warm_restart.is_some() && e.workload == Workload::StatefulSet;
    if (options.relate_pods && warm_starts) || options.agent_reports(&e) {
        related_resources.push(ResourceRule {
            api_version: Pod::API_VERSION,
            resource: Pod::URL_PATH_SEGMENT,
            namespace: namespace.clone(),
            names: Vec::new(),
            label_selector: Some(labels::selector(&req.parent.metadata.name)),
        });
    }
    if !settled(&req.parent) {
        related_resources.extend(child_rules(req, options));
    }
    Ok(CustomizeResponse { related_resources })
}

/// Whether the Memcached's status is one of this hook's answers (it has `desiredReplicas`), of
/// its current generation, and says Ready: then each of its children exists, and none of its
/// names needs looking up. A status another controller wrote (the reference operator's, before
/// its Memcacheds move to the hook) says nothing of the hook's children.
fn settled(parent: &Parent) -> bool {
    let status = &parent.status;
    let current = status.observed_generation.is_some()
        && status.observed_generation == parent.metadata.generation;
    status.desired_replicas.is_some()
        && current
        && status
            .conditions
            .iter()
            .any(|c| c.type_ == READY && c.status == "True")
}

/// Rules naming the children a first sync of `req`'s parent answers, of the kinds the
/// CompositeController declares (none when the spec is invalid: it creates nothing).
fn child_rules(req: &CustomizeRequest, options: &Options) -> Vec<ResourceRule> {
    let request = SyncRequest {
        controller: Controller {
            spec: ControllerSpec {
                child_resources: req.controller.spec.child_resources.clone(),
                hooks: SyncHooks::default(),
            },
        },
        parent: req.parent.clone(),
        children: Observed::default(),
        related: Observed::default(),
        finalizing: false,
    };
    // Names depend on neither time nor observed state.
    match super::sync(&Received::built(request), Timestamp::UNIX_EPOCH, options) {
        Ok(answer) => taken::rules(&answer.children, req.parent.metadata.namespace.as_deref()),
        Err(_) => Vec::new(),
    }
}
