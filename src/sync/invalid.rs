//! The answer to an invalid spec: the observed children kept as they are, or why they cannot be.

use super::{Outcome, SyncError};
use crate::api::validation::{self, Violation};
use crate::hook::{Child, Received};
use crate::keep::{self, Asked};

/// Why an invalid spec cannot keep the observed children.
const NOTHING_TO_KEEP: &str = "no observed children to keep";
/// Why an invalid spec cannot keep the observed children.
const CHILD_WITHOUT_LAST_APPLIED: &str = "an observed child has no last-applied configuration or server-side apply record of its own to keep";

/// The observed children kept as they are ([`keep`]) for a spec that breaks `violations`, or
/// why they cannot be.
pub(super) fn keep_observed(
    received: &Received<'_>,
    violations: Vec<Violation>,
) -> Result<(Vec<Child>, Outcome), SyncError> {
    let Some(children) = keep::observed(received, Asked::EveryChild) else {
        let reason = if received.request().children.is_empty() {
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
