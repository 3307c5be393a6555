//! The answer to an invalid spec: the observed children kept as they are, or why they cannot be.

use super::{Outcome, SyncError};
use crate::api::validation::{self, Violation};
use crate::hook::{Child, SyncRequest};
use crate::workload;

/// Why an invalid spec cannot keep the observed children.
const NOTHING_TO_KEEP: &str = "no observed children to keep";
/// Why an invalid spec cannot keep the observed children.
const CHILD_WITHOUT_LAST_APPLIED: &str = "an observed child has no last-applied configuration or server-side apply record of its own to keep";

/// Observed children as this hook last desired them, when every one of them carries it and it
/// names that very child (a hand-edited annotation naming another object would make
/// Metacontroller delete the observed child and create a stranger).
fn kept_children(req: &SyncRequest, namespace: &str) -> Option<Vec<Child>> {
    if req.children.is_empty() {
        return None;
    }
    req.children
        .iter()
        .map(|child| workload::last_applied(child, namespace).map(Child::Kept))
        .collect()
}

/// The observed children kept as they are for a spec that breaks `violations`, or why they
/// cannot be.
pub(super) fn keep_observed(
    req: &SyncRequest,
    body: Option<&[u8]>,
    namespace: &str,
    violations: Vec<Violation>,
) -> Result<(Vec<Child>, Outcome), SyncError> {
    let kept = kept_children(req, namespace)
        .or_else(|| body.and_then(crate::hook::applied::kept_children));
    let Some(children) = kept else {
        let reason = if req.children.is_empty() {
            NOTHING_TO_KEEP
        } else {
            CHILD_WITHOUT_LAST_APPLIED
        };
        return Err(SyncError::InvalidSpec { reason, violations });
    };
    let invalid_spec = Some(validation::summary(&violations));
    Ok((
        children,
        Outcome {
            invalid_spec,
            ..Outcome::default()
        },
    ))
}
