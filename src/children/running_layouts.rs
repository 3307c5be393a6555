//! The memory layouts a StatefulSet's pods may run with, recorded on the StatefulSet itself, so
//! that a layout change is announced for as long as its rollout runs (docs/warm-restart.md).
//!
//! Metacontroller applies a new pod template at once, so from the sync after the one that
//! starts a rollout on, the observed template is the spec's: comparing the two would announce
//! the change for one sync only. Instead every sync answers the StatefulSet with the
//! [`ANNOTATION`], the layouts its pods may hold, derived from the observed StatefulSet alone:
//!
//! - none observed: the spec's layout (the pods start with it);
//! - rolled out (its controller has seen its generation, the update revision is the current one
//!   and every replica is updated): the template's layout, which every pod runs;
//! - rolling out: the observed annotation's layouts and the template's (a pod is either still
//!   old or already updated; a spec changed during the rollout adds its layout to them).
//!
//! A layout other than the spec's among them means the rollout discards caches:
//! `WarmRestart` says `LayoutChange` until the StatefulSet has rolled out the spec's layout.
//! The annotation is on the StatefulSet's metadata, never on the pod template: writing it rolls
//! no pod. Its value is a JSON list of layouts, each its memcached arguments
//! (`[["-I","1m","-m","64"]]`), sorted and without repeats, so that a settled StatefulSet is
//! answered the same annotation on every sync. A StatefulSet without it (written before the hook
//! kept it) or with one that does not read as such a list counts as holding the template's
//! layout only.

use serde_json::Value;

use super::args;
use super::memory::MemorySettings;
use crate::api::effective::Effective;
use crate::hook::ObservedChild;

/// The StatefulSet annotation with the layouts its pods may hold.
pub const ANNOTATION: &str = "memcached.c5c3.io/running-layouts";

/// The spec's layout and the layouts the pods of the StatefulSet may hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layouts {
    spec: MemorySettings,
    running: Vec<MemorySettings>,
}

impl Layouts {
    /// The layouts for the spec `e` and the `observed` StatefulSet (see the module).
    #[must_use]
    pub fn of(e: &Effective<'_>, observed: Option<&ObservedChild>) -> Self {
        Self::from_spec(MemorySettings::of(&args::memcached(e)), observed)
    }

    fn from_spec(spec: MemorySettings, observed: Option<&ObservedChild>) -> Self {
        let running = match observed {
            None => vec![spec.clone()],
            Some(sts) => running(sts),
        };
        Self { spec, running }
    }

    /// The settings the rollout to the spec changes, from any layout the pods may hold (each
    /// `<flag> <old> -> <new>`, sorted, no repeats); empty when every pod keeps its layout.
    #[must_use]
    pub fn changes(&self) -> Vec<String> {
        let all: std::collections::BTreeSet<String> = self
            .running
            .iter()
            .flat_map(|old| old.changes(&self.spec))
            .collect();
        all.into_iter().collect()
    }

    /// The value of [`ANNOTATION`].
    #[must_use]
    pub fn annotation(&self) -> String {
        let layouts: Vec<Value> = self.running.iter().map(|l| Value::from(l.args())).collect();
        Value::from(layouts).to_string()
    }
}

/// The layouts the pods of an observed StatefulSet may hold.
fn running(sts: &ObservedChild) -> Vec<MemorySettings> {
    let args = sts
        .spec
        .template
        .as_ref()
        .and_then(|t| t.args_of("memcached"));
    let template = MemorySettings::of(args.unwrap_or_default());
    if sts.rolled_out() {
        return vec![template];
    }
    let mut all = sts
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.running_layouts.as_deref())
        .and_then(read)
        .unwrap_or_default();
    all.push(template);
    all.sort();
    all.dedup();
    all
}

/// The layouts of an annotation's value; `None` when it is not a list of argument lists.
fn read(text: &str) -> Option<Vec<MemorySettings>> {
    let lists: Vec<Vec<String>> = serde_json::from_str(text).ok()?;
    Some(lists.iter().map(|args| MemorySettings::of(args)).collect())
}

#[cfg(test)]
mod tests;
