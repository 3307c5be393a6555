//! A workload kept as it runs: rebuilt from its own labels, the annotations this hook writes on
//! it and its whole spec, exactly as the request body sends them. The decoded request skips the
//! spec; the body is read for it once per request ([`Received::sent`]), however many workloads
//! are kept.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::hook::{ObservedChild, Received, Sent};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rebuilt<'a> {
    api_version: &'a str,
    kind: &'a str,
    metadata: RebuiltMeta<'a>,
    spec: &'a RawValue,
}

#[derive(Serialize)]
struct RebuiltMeta<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<&'a RawValue>,
    /// The hook's own annotations: under server-side apply an answer without them would remove
    /// them, and a Deployment counts an annotation change as a new generation.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<&'static str, &'a str>,
}

/// `child` rebuilt from its labels (if any) and its spec as the body of `received` sends them;
/// an apply of it leaves the object as it is. `None` when the body holds no such child or it
/// has no spec.
pub(super) fn labels_and_spec(
    received: &Received<'_>,
    child: &ObservedChild,
) -> Option<Box<RawValue>> {
    let sent = received.sent(child)?;
    let spec = sent.spec.as_deref()?;
    let mut annotations = BTreeMap::new();
    if let Some(a) = &child.metadata.annotations {
        let own = [
            (
                "memcached.c5c3.io/running-layouts",
                a.running_layouts.as_deref(),
            ),
            (
                "memcached.c5c3.io/template-hash",
                a.template_hash.as_deref(),
            ),
            ("memcached.c5c3.io/source", a.source.as_deref()),
        ];
        annotations.extend(own.into_iter().filter_map(|(k, v)| Some((k, v?))));
    }
    let rebuilt = Rebuilt {
        api_version: &child.api_version,
        kind: &child.kind,
        metadata: RebuiltMeta {
            name: &child.metadata.name,
            labels: sent.metadata.labels.as_deref(),
            annotations,
        },
        spec,
    };
    serde_json::value::to_raw_value(&rebuilt).ok()
}

/// The pod template of the observed workload `child` as the body of `received` sends it (live,
/// with the API server's defaults); `None` when the body holds no such child or it has no
/// template.
pub(super) fn template(
    received: &Received<'_>,
    child: &ObservedChild,
) -> Option<k8s_openapi::api::core::v1::PodTemplateSpec> {
    sent_template(received.sent(child)?)
}

/// The pod template in the spec of a workload as the body sends it.
pub(super) fn sent_template(sent: &Sent) -> Option<k8s_openapi::api::core::v1::PodTemplateSpec> {
    #[derive(Deserialize)]
    struct Spec {
        template: Option<k8s_openapi::api::core::v1::PodTemplateSpec>,
    }
    let spec: Spec = serde_json::from_str(sent.spec.as_deref()?.get()).ok()?;
    spec.template
}
