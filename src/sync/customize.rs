//! The customize hook's answer: which related objects Metacontroller sends with each sync.

use k8s_openapi::Resource as _;
use k8s_openapi::api::core::v1::{Pod, Secret};

use super::{Options, SyncError, check_parent};
use crate::api::effective::Effective;
use crate::api::{Workload, apiserver};
use crate::children::labels;
use crate::hook::{CustomizeRequest, CustomizeResponse, ResourceRule};

/// The related objects Metacontroller should send with each sync, in the parent's namespace:
/// the Secrets of the enabled SASL and TLS blocks, and, with [`Options::relate_pods`], the
/// Memcached's pods when they have something to tell: with `warmRestart` on a StatefulSet, how
/// each pod last started (its warm-restart guard); with Secrets reloaded in place, whether each
/// pod's reload agent applied them (its condition on the Pod).
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
    Ok(CustomizeResponse { related_resources })
}
