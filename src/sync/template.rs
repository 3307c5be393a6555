//! The pod template a workload is answered with: the one it runs while its owner's intent is
//! unchanged, else the one rendered now (the rule is `workload::intent`'s).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::children::labels;
use crate::children::pod::{RESTART_TRIGGER, Rollers, SECRET_HASH};
use crate::hook::{Child, ObservedChild, Parent, Received};
use crate::keep;
use crate::status::up_to_date;
use crate::workload::intent::{self, Template};
use crate::workload::rollout;

use super::Options;

/// The owner's intent of this sync, as [`intent::decide`] compares it.
pub(super) struct Intent {
    /// The digest of the intent ([`intent::digest`]).
    pub(super) digest: String,
    /// What the parent says of its own history, and the hook's setting.
    pub(super) parent: intent::Parent,
}

impl Intent {
    /// The intent of `parent` whose templates `rollers` roll, under the hook's `options`.
    pub(super) fn of(parent: &Parent, rollers: Rollers<'_>, options: &Options) -> Self {
        let status = &parent.status;
        Self {
            digest: intent::digest(&parent.spec, rollers),
            parent: intent::Parent {
                synced: intent::Parent::synced(
                    parent.metadata.generation,
                    status.observed_generation,
                ),
                adopt_at_once: options.adopt_new_rendering,
            },
        }
    }
}

/// Answers the built workload `child` (observed as `current`) with the pod template it runs
/// when its owner's intent is unchanged, and records on it the intent's digest
/// ([`intent::ANNOTATION`]) and the hash of the template answered ([`rollout::ANNOTATION`]),
/// kept or rendered alike. Returns what a rollout to the rendered template would change for a
/// workload that keeps its template (empty when nothing), `None` for one answered with the
/// rendered template.
pub(super) fn answer(
    child: &mut Child,
    (received, current): (&Received<'_>, Option<&ObservedChild>),
    intent: &Intent,
) -> Option<Vec<String>> {
    let differences = keep_template(child, received, current, intent);
    let hash = template(child).map(rollout::template_hash);
    if let (Some(meta), Some(hash)) = (metadata_mut(child), hash) {
        let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(intent::ANNOTATION.to_owned(), intent.digest.clone());
        annotations.insert(rollout::ANNOTATION.to_owned(), hash);
    }
    differences
}

/// Replaces the rendered template of `child` with the one this hook last answered for
/// `current` ([`answered`]) when the owner's intent keeps it; see [`answer`].
fn keep_template(
    child: &mut Child,
    received: &Received<'_>,
    current: Option<&ObservedChild>,
    intent: &Intent,
) -> Option<Vec<String>> {
    let decision = intent::decide(current, &intent.digest, intent.parent);
    let (mut kept, decision) = match current {
        // Not observed: an object of its name that no controller owns, which server-side apply
        // takes over with this answer ([`unowned`]), or nothing to keep.
        None => (
            unowned(received, child, intent)?,
            Template::KeepIfRollersAgree,
        ),
        Some(_) if decision == Template::Render => return None,
        // The template this hook last answered is kept: the live template alone cannot tell a
        // hand edit (which Metacontroller must undo) from an earlier rendering. A workload that
        // this hook has marked but whose answered template cannot be proven gets the rendered
        // one; one that carries no mark of it at all keeps the template it runs ([`unmarked`]).
        Some(current) => match answered(received, current) {
            Some(kept) => (kept, decision),
            None if decision == Template::KeepIfRollersAgree => {
                (unmarked(received, current)?, decision)
            }
            None => return None,
        },
    };
    let rendered = template(child)?;
    if decision == Template::KeepIfRollersAgree && !rollers_agree(&kept, rendered) {
        return None;
    }
    let differences = up_to_date::differences(&kept, rendered, true);
    let selected = selector_labels(child);
    let pod_labels = kept
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    pod_labels.extend(selected);
    let version = pod_labels.get(labels::VERSION).cloned();
    *template_mut(child)? = kept;
    keep_version(child, version);
    Some(differences)
}

/// The workload's version label names the version its pods run, the kept template's, not the
/// one of today's default image; none when that template has none.
fn keep_version(child: &mut Child, version: Option<String>) {
    let Some(workload_labels) = metadata_mut(child).and_then(|m| m.labels.as_mut()) else {
        return;
    };
    match version {
        Some(version) => workload_labels.insert(labels::VERSION.to_owned(), version),
        None => workload_labels.remove(labels::VERSION),
    };
}

/// The pod template this hook last answered for the observed workload `current`, when that can
/// be proven: its last-applied annotation (dynamic apply), else the template Metacontroller
/// applied with server-side apply when its hash is the one the workload records
/// ([`rollout::ANNOTATION`], the hash of the template answered). A field another manager took
/// over, or a value changed since, changes the hash: such a template is no answer of this
/// hook's.
pub(super) fn answered(
    received: &Received<'_>,
    current: &ObservedChild,
) -> Option<PodTemplateSpec> {
    if let Some(applied) = keep::last_applied_template(current) {
        return Some(applied);
    }
    let annotations = current.metadata.annotations.as_ref();
    let recorded = annotations.and_then(|a| a.template_hash.as_deref())?;
    let applied = keep::server_side_applied_template(received, current)?;
    (rollout::template_hash(&applied) == recorded).then_some(applied)
}

/// The pod template the observed workload `current` runs, live, when it carries no mark of this
/// hook: no last-applied configuration, no recorded template hash and no intent digest. Such a
/// workload was written by another controller and adopted (the reference operator's Deployment
/// of the same name and labels) or by a build of this hook older than those marks; there is no
/// answer of this hook to prove, so nothing to tell a hand edit from, and rolling its pods
/// would empty the cache for no change of its owner's. The answer records the marks, so the
/// next sync keeps it as any other.
fn unmarked(received: &Received<'_>, current: &ObservedChild) -> Option<PodTemplateSpec> {
    let annotations = current.metadata.annotations.as_ref();
    let marked = current.last_applied().is_some()
        || annotations.is_some_and(|a| a.template_hash.is_some() || a.source.is_some());
    if marked {
        return None;
    }
    keep::observed_template(received, current)
}

/// The live pod template of the object of `child`'s name that no controller owns, sent as a
/// related object (the customize hook asks for the children's names while the Memcached is
/// unsettled), when the Memcached is synced and the hook's setting keeps templates. Under
/// server-side apply Metacontroller creates a child by applying it, which takes such an object
/// over at once: the reference operator's Deployment, released when its Memcached moved to the
/// hook. Answering the template it runs keeps its pods; under dynamic apply the answer is not
/// applied until the object is adopted, and then [`unmarked`] keeps the same template.
fn unowned(received: &Received<'_>, child: &Child, intent: &Intent) -> Option<PodTemplateSpec> {
    if !intent.parent.synced || intent.parent.adopt_at_once {
        return None;
    }
    let (api_version, kind, meta) = match child {
        Child::Deployment(d) => ("apps/v1", "Deployment", &d.metadata),
        Child::StatefulSet(s) => ("apps/v1", "StatefulSet", &s.metadata),
        _ => return None,
    };
    let name = meta.name.as_deref()?;
    let related = received
        .request()
        .related
        .iter()
        .find(|o| o.api_version == api_version && o.kind == kind && o.metadata.name == name)?;
    if related.metadata.controller().is_some() {
        return None;
    }
    keep::related_template(received, (api_version, kind, name))
}

/// Whether the kept template records the same observed inputs (the secret hash, the restart
/// trigger) as the one rendered now.
fn rollers_agree(kept: &PodTemplateSpec, rendered: &PodTemplateSpec) -> bool {
    let roller = |t: &PodTemplateSpec, key: &str| {
        let annotations = t.metadata.as_ref().and_then(|m| m.annotations.as_ref());
        annotations.and_then(|a| a.get(key)).cloned()
    };
    [SECRET_HASH, RESTART_TRIGGER]
        .into_iter()
        .all(|key| roller(kept, key) == roller(rendered, key))
}

/// Sets the intent's digest recorded on `child` to the one `current` is observed with (a zone
/// the rollout holds back keeps its template, and so the intent it was rendered for).
pub(super) fn record_observed(child: &mut Child, current: &ObservedChild) {
    let Some(annotations) = metadata_mut(child).and_then(|m| m.annotations.as_mut()) else {
        return;
    };
    match intent::recorded(current) {
        Some(recorded) => {
            annotations.insert(intent::ANNOTATION.to_owned(), recorded.to_owned());
        }
        None => {
            annotations.remove(intent::ANNOTATION);
        }
    }
}

/// The labels the selector of a built workload matches.
pub(super) fn selector_labels(child: &Child) -> BTreeMap<String, String> {
    let selector = match child {
        Child::Deployment(d) => d.spec.as_ref().map(|s| &s.selector),
        Child::StatefulSet(s) => s.spec.as_ref().map(|s| &s.selector),
        _ => None,
    };
    selector
        .and_then(|s| s.match_labels.clone())
        .unwrap_or_default()
}

/// The pod template of a built workload.
pub(super) fn template(child: &Child) -> Option<&PodTemplateSpec> {
    match child {
        Child::Deployment(d) => d.spec.as_ref().map(|s| &s.template),
        Child::StatefulSet(s) => s.spec.as_ref().map(|s| &s.template),
        _ => None,
    }
}

/// The pod template of a built workload, to change.
pub(super) fn template_mut(child: &mut Child) -> Option<&mut PodTemplateSpec> {
    match child {
        Child::Deployment(d) => d.spec.as_mut().map(|s| &mut s.template),
        Child::StatefulSet(s) => s.spec.as_mut().map(|s| &mut s.template),
        _ => None,
    }
}

/// The metadata of a built workload.
pub(super) fn metadata_mut(child: &mut Child) -> Option<&mut ObjectMeta> {
    match child {
        Child::Deployment(d) => Some(&mut d.metadata),
        Child::StatefulSet(s) => Some(&mut s.metadata),
        _ => None,
    }
}
