//! The `WarmRestart` condition: whether the pods keep their cache across restarts, and, from the
//! sync that starts a rollout until it is done, whether the rollout discards it: whether the
//! pods may hold another memory layout than the spec's (`children::running_layouts`,
//! docs/warm-restart.md).
//!
//! Whether each pod's last start restored its items is the termination message of the pod's
//! `warm-restart-guard` init container (`warm_starts`); the condition reports it when
//! Metacontroller sends the pods (the customize hook asks for them), and points to it otherwise.

use super::SpecCondition;
use super::warm_starts::Starts;
use crate::api::Workload;
use crate::api::effective::Effective;
use crate::api::warm_restart::WarmRestart;
use crate::children::running_layouts::Layouts;
use crate::children::warm_restart;
use crate::hook::{Observed, RelatedObject};
use crate::workload::Plan;

const OFF_BRIDGED: &str = "spec.warmRestart is off: the StatefulSet with volumes is replaced \
    through a Deployment (volume claim templates cannot change in place); a restart of a pod \
    empties its cache";
const OFF: &str = "spec.warmRestart is off: a restart of a pod empties its cache";
const VOLUME_CHANGE: &str = "The volume claim template changed and cannot change in place: the \
    StatefulSet is replaced through a Deployment, and the new pods start with an empty cache";
const LAYOUT_CHANGE: &str = "The rollout of this spec discards the cache: memcached restores its \
    items only with the same memory layout, and this changes";

/// The condition for a spec that asks for a StatefulSet; `None` otherwise. `related` are the
/// related objects of the sync, whose pods in `namespace` tell how each pod last started.
#[must_use]
pub fn condition(
    e: &Effective<'_>,
    plan: &Plan<'_>,
    related: &Observed<RelatedObject>,
    namespace: &str,
) -> Option<SpecCondition> {
    if e.workload != Workload::StatefulSet {
        return None;
    }
    let Some(w) = &e.warm_restart else {
        return Some(SpecCondition {
            status: false,
            reason: "Disabled",
            message: (if plan.bridge { OFF_BRIDGED } else { OFF }).to_owned(),
        });
    };
    if plan.bridge {
        return Some(SpecCondition {
            status: true,
            reason: "VolumeChange",
            message: VOLUME_CHANGE.to_owned(),
        });
    }
    let changes = plan
        .layouts
        .as_ref()
        .map(Layouts::changes)
        .unwrap_or_default();
    if !changes.is_empty() {
        return Some(SpecCondition {
            status: true,
            reason: "LayoutChange",
            message: format!("{LAYOUT_CHANGE} {}", changes.join(", ")),
        });
    }
    Some(enabled(w, &Starts::of(related, namespace)))
}

/// `Enabled`: what is kept, and how each pod last started when the pods were seen.
fn enabled(w: &WarmRestart<'_>, starts: &Starts<'_>) -> SpecCondition {
    let last_starts = starts.summary().unwrap_or_else(|| {
        format!(
            "each pod's last start is the termination message of its {} init container",
            warm_restart::GUARD
        )
    });
    SpecCondition {
        status: true,
        reason: "Enabled",
        message: format!(
            "Each pod keeps its cache across restarts on its volume {}-<pod> ({}); items saved \
             more than {} s before the restart are dropped; {last_starts}",
            warm_restart::VOLUME,
            w.size,
            w.max_stale_seconds,
        ),
    }
}
