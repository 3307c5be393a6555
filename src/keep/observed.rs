//! A workload kept as it runs: rebuilt from its own labels and whole spec, exactly as the
//! request body sends them. The decoded request skips the spec, so the body is read again, for
//! the one child asked for.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::hook::{Observed, ObservedChild};

/// An observed workload as sent: its labels and its whole spec.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Workload {
    api_version: String,
    kind: String,
    metadata: WorkloadMeta,
    #[serde(default)]
    spec: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct WorkloadMeta {
    name: String,
    #[serde(default)]
    labels: Option<Box<RawValue>>,
}

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
}

/// `child` rebuilt from its labels (if any) and its spec as `body` sends them; an apply of it
/// leaves the object as it is. `None` when `body` holds no such child or it has no spec.
pub(super) fn labels_and_spec(body: &[u8], child: &ObservedChild) -> Option<Box<RawValue>> {
    let sent = sent(body, child)?;
    let spec = sent.spec?;
    let rebuilt = Rebuilt {
        api_version: &child.api_version,
        kind: &child.kind,
        metadata: RebuiltMeta {
            name: &child.metadata.name,
            labels: sent.metadata.labels.as_deref(),
        },
        spec: &spec,
    };
    serde_json::value::to_raw_value(&rebuilt).ok()
}

/// The pod template of the observed workload `child` as `body` sends it (live, with the API
/// server's defaults); `None` when `body` holds no such child or it has no template.
pub(super) fn template(
    body: &[u8],
    child: &ObservedChild,
) -> Option<k8s_openapi::api::core::v1::PodTemplateSpec> {
    #[derive(Deserialize)]
    struct Spec {
        template: Option<k8s_openapi::api::core::v1::PodTemplateSpec>,
    }
    let spec: Spec = serde_json::from_str(sent(body, child)?.spec?.get()).ok()?;
    spec.template
}

/// The observed workload `child` as the request `body` sends it; `None` when it holds none.
fn sent(body: &[u8], child: &ObservedChild) -> Option<Workload> {
    #[derive(Deserialize)]
    struct Children {
        #[serde(default)]
        children: Observed<Workload>,
    }
    let req: Children = serde_json::from_slice(body).ok()?;
    req.children.0.into_iter().find(|c| {
        c.api_version == child.api_version
            && c.kind == child.kind
            && c.metadata.name == child.metadata.name
    })
}
