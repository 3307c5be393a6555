//! The customize hook's answer: which related objects Metacontroller sends with each sync.

use k8s_openapi::Resource as _;
use k8s_openapi::api::core::v1::Secret;

use super::{SyncError, check_parent};
use crate::api::apiserver;
use crate::api::effective::Effective;
use crate::hook::{CustomizeRequest, CustomizeResponse, ResourceRule};

/// The related Secrets Metacontroller should send with each sync: those of the enabled SASL
/// and TLS blocks, in the parent's namespace.
///
/// # Errors
/// [`SyncError::WrongParent`] for a parent of another kind or group.
pub fn customize(req: &CustomizeRequest) -> Result<CustomizeResponse, SyncError> {
    check_parent(&req.parent)?;
    // A name no Secret can have can only come from an invalid spec (the sync answer reports
    // it): asking Metacontroller to watch it would cost a lookup and find nothing.
    let mut names = Effective::of(&req.parent.spec).security.secrets();
    names.retain(|name| apiserver::is_dns_subdomain(name));
    let related_resources = if names.is_empty() {
        Vec::new()
    } else {
        vec![ResourceRule {
            api_version: Secret::API_VERSION,
            resource: Secret::URL_PATH_SEGMENT,
            namespace: req.parent.metadata.namespace.clone(),
            names: names.into_iter().map(str::to_owned).collect(),
        }]
    };
    Ok(CustomizeResponse { related_resources })
}
