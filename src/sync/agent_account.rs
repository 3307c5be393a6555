//! Whether the reload agent's ServiceAccount and RoleBinding are children
//! (`children::agent_access`): while the agent reports, and after that for as long as a pod may
//! still be created from a template that names the ServiceAccount. A ReplicaSet or StatefulSet
//! cannot create a pod whose ServiceAccount is gone, so dropping it when reporting ends (a
//! switch to `RollingRestart`, the hook without `--relate-pods`) would stall the very rollout
//! that removes it from the template.

use super::Options;
use crate::api::effective::Effective;
use crate::children::agent_access;
use crate::hook::{ObservedChild, SyncRequest};
use crate::workload::Plan;

/// What the agent's access is this sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// Not a child.
    None,
    /// The agent reports: the pods run as the ServiceAccount.
    Report,
    /// The pods no longer run as it, but the rollout away from it is not over.
    Linger,
}

/// The agent's access for the Memcached of `req`.
pub(super) fn access(
    e: &Effective<'_>,
    options: &Options,
    req: &SyncRequest,
    plan: &Plan<'_>,
) -> Access {
    if options.agent_reports(e) {
        return Access::Report;
    }
    let account = agent_access::account_name(&req.parent.metadata.name);
    let observed = req
        .children
        .find("v1", "ServiceAccount", &account)
        .is_some();
    let names_it = |w: &ObservedChild| {
        let spec = w.spec.template.as_ref().and_then(|t| t.spec.as_ref());
        spec.and_then(|s| s.service_account_name.as_deref()) == Some(account.as_str())
    };
    // This sync's template drops it, or pods of a template that named it may still be made.
    let needed = plan.current.is_some_and(|w| names_it(w) || !w.rolled_out())
        || plan.switching_from().is_some();
    if observed && needed {
        Access::Linger
    } else {
        Access::None
    }
}
