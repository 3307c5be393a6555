//! Container resources: the user's, with canonical quantities, and the fixed ones of the small
//! containers of the hook's own image.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::api::quantity;

/// Resources with canonical quantities, absent when empty; `memory_request_mib` (the default
/// memory request, only when the user gave no memory) joins the requests.
pub(super) fn resources(
    requirements: Option<&ResourceRequirements>,
    memory_request_mib: Option<i64>,
) -> Option<ResourceRequirements> {
    let canonical = |list: Option<&BTreeMap<String, Quantity>>| {
        list.filter(|l| !l.is_empty()).map(|l| {
            l.iter()
                .map(|(k, q)| (k.clone(), quantity::canonical(q)))
                .collect::<BTreeMap<_, _>>()
        })
    };
    let r = requirements;
    let mut requests = canonical(r.and_then(|r| r.requests.as_ref()));
    if let Some(mib) = memory_request_mib {
        requests
            .get_or_insert_default()
            .insert("memory".to_owned(), Quantity(format!("{mib}Mi")));
    }
    let out = ResourceRequirements {
        limits: canonical(r.and_then(|r| r.limits.as_ref())),
        requests,
        claims: r.and_then(|r| r.claims.clone()).filter(|c| !c.is_empty()),
    };
    (out != ResourceRequirements::default()).then_some(out)
}

/// Fixed quantities, e.g. `[("cpu", "10m"), ("memory", "32Mi")]`.
pub(super) fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
        .collect()
}
