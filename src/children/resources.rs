//! Container resources: the user's, with canonical quantities, and the fixed ones of the small
//! containers of the hook's own image.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::api::quantity;

/// Resources with canonical quantities, absent when empty. Each of `defaults` (a resource
/// and a request in MiB, such as the default memory request) joins the requests when the user
/// gave neither a request nor a limit of that resource: a limit alone makes the API server
/// request it, and a smaller request of ours would lower the pod's QoS class.
pub(super) fn resources(
    requirements: Option<&ResourceRequirements>,
    defaults: &[(&str, Option<i64>)],
) -> Option<ResourceRequirements> {
    let canonical = |list: Option<&BTreeMap<String, Quantity>>| {
        list.filter(|l| !l.is_empty()).map(|l| {
            l.iter()
                .map(|(k, q)| (k.clone(), quantity::canonical(q)))
                .collect::<BTreeMap<_, _>>()
        })
    };
    let r = requirements;
    let given = |resource: &str| {
        r.is_some_and(|r| {
            [&r.requests, &r.limits]
                .iter()
                .any(|l| l.as_ref().is_some_and(|l| l.contains_key(resource)))
        })
    };
    let mut requests = canonical(r.and_then(|r| r.requests.as_ref()));
    for (resource, mib) in defaults {
        if let Some(mib) = mib.filter(|_| !given(resource)) {
            requests
                .get_or_insert_default()
                .insert((*resource).to_owned(), quantity::mebibytes(mib));
        }
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
