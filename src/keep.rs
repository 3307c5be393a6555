//! Keeping observed children exactly as they are: the one place that decides how.
//!
//! A sync keeps observed children in four cases:
//!
//! - an invalid spec keeps every observed child (a typo must never delete a running cache);
//! - a switch between a Deployment and a StatefulSet keeps the leaving workload until the new
//!   one is ready;
//! - a switch of the zone layout (zones turned on or off, or renamed) keeps every leaving
//!   workload and its disruption budget until the new workloads are settled;
//! - a zone rollout holds a later zone's workload at the pod template it runs
//!   ([`observed_template`]) while an earlier zone rolls out.
//!
//! Apart from those, a workload whose owner's intent is unchanged keeps the pod template this
//! hook last answered for it, read from the same first two sources
//! ([`last_applied_template`], [`server_side_applied_template`]).
//!
//! A kept child is answered so that Metacontroller's apply of it changes nothing. It is read
//! from the first of these sources that serves every child asked for, all of them from the
//! same source:
//!
//! 1. **Last-applied** ([`last_applied`]): under Metacontroller's dynamic apply every child
//!    carries this hook's last answer in an annotation, decoded with the request.
//! 2. **Managed fields** ([`managed`], every child of an invalid spec): under server-side apply
//!    the API server records the fields Metacontroller applied; they are projected from the
//!    child's live values.
//! 3. **Labels and spec** ([`observed`], a leaving workload or its budget): the child rebuilt
//!    from its own labels and whole spec.
//!
//! The first source reads the decoded request only. The other two read the body as received a
//! second time ([`Received::body`], [`Received::sent`]), in time linear in its size however
//! many children are kept; they run only on these rare paths, and under server-side apply for
//! the pod template a workload keeps ([`server_side_applied_template`], once per request),
//! never on an ordinary sync under dynamic apply. Once the request's answer is no longer awaited
//! ([`Received::stopped`]) nothing more is kept.

mod last_applied;
mod managed;
mod observed;

use k8s_openapi::api::core::v1::PodTemplateSpec;

use crate::hook::{Child, ObservedChild, Received};

/// The observed children asked to be kept.
#[derive(Clone, Copy, Debug)]
pub enum Asked<'a> {
    /// Every observed child, for a spec that is invalid.
    EveryChild,
    /// A workload leaving the layout (or its budget), until the new workloads are ready.
    LeavingWorkload(&'a ObservedChild),
}

/// Where a kept child is read from; [`Source::IN_ORDER`] is the order they are tried in.
#[derive(Clone, Copy, Debug)]
enum Source {
    LastApplied,
    ManagedFields,
    LabelsAndSpec,
}

impl Source {
    const IN_ORDER: [Self; 3] = [Self::LastApplied, Self::ManagedFields, Self::LabelsAndSpec];

    /// The children `asked`, every one of them read from this source; `None` when one cannot
    /// be, or when the source does not serve what is asked (managed fields keep every child of
    /// an invalid spec, labels and spec a leaving workload).
    fn read(self, received: &Received<'_>, asked: Asked<'_>) -> Option<Vec<Child>> {
        let request = received.request();
        match (self, asked) {
            (Self::LastApplied, _) => {
                let namespace = request.parent.metadata.namespace.as_deref();
                let namespace = namespace.unwrap_or_default();
                let keep = |child| last_applied::last_applied(child, namespace).map(Child::Kept);
                match asked {
                    Asked::EveryChild => request.children.iter().map(keep).collect(),
                    Asked::LeavingWorkload(child) => keep(child).map(|kept| vec![kept]),
                }
            }
            (Self::ManagedFields, Asked::EveryChild) => managed::kept_children(received.body()?),
            (Self::LabelsAndSpec, Asked::LeavingWorkload(child)) => {
                let kept = observed::labels_and_spec(received, child)?;
                Some(vec![Child::Kept(kept)])
            }
            (Self::ManagedFields, Asked::LeavingWorkload(_))
            | (Self::LabelsAndSpec, Asked::EveryChild) => None,
        }
    }
}

/// The children `asked` kept as observed: each answered so that applying it changes nothing,
/// all from the first source that serves them all (see the module). `None` when no source can
/// keep them all, when every child is asked for and none was observed, or when the request's
/// answer is no longer awaited ([`Received::stopped`]).
#[must_use]
pub fn observed(received: &Received<'_>, asked: Asked<'_>) -> Option<Vec<Child>> {
    if received.stopped()
        || matches!(asked, Asked::EveryChild) && received.request().children.is_empty()
    {
        return None;
    }
    Source::IN_ORDER
        .into_iter()
        .find_map(|source| source.read(received, asked))
}

/// The pod template of the observed workload `child`, to repeat it unchanged: as this hook last
/// desired it (the last-applied annotation), else as the request body sends it. `None` when
/// neither has one.
#[must_use]
pub fn observed_template(
    received: &Received<'_>,
    child: &ObservedChild,
) -> Option<PodTemplateSpec> {
    last_applied_template(child).or_else(|| observed::template(received, child))
}

/// The pod template of the related object of `identity` (`apiVersion`, `kind`, name), live, as
/// the request body sends it. `None` when the body holds no such object or it has no template.
#[must_use]
pub fn related_template(
    received: &Received<'_>,
    identity: (&str, &str, &str),
) -> Option<PodTemplateSpec> {
    observed::sent_template(received.sent_related(identity)?)
}

/// The pod template Metacontroller last applied to the observed workload `child` with
/// server-side apply: its field set of the template ([`managed`]) with the live values. A field
/// another manager took over since is not in it. The body is read for it once per request
/// ([`Received::sent`]). `None` without a body, a parent UID, or such a record.
#[must_use]
pub fn server_side_applied_template(
    received: &Received<'_>,
    child: &ObservedChild,
) -> Option<PodTemplateSpec> {
    let uid = received.request().parent.metadata.uid.as_deref()?;
    let sent = received.sent(child)?;
    let (fields, spec) = (
        sent.metadata.managed_fields.as_deref()?,
        sent.spec.as_deref()?,
    );
    let text = managed::applied_template(fields, spec, uid)?;
    serde_json::from_str(&text).ok()
}

/// The pod template in the last-applied annotation of `child`, if it has one.
#[must_use]
pub fn last_applied_template(child: &ObservedChild) -> Option<PodTemplateSpec> {
    #[derive(serde::Deserialize)]
    struct Applied {
        spec: Option<Spec>,
    }
    #[derive(serde::Deserialize)]
    struct Spec {
        template: Option<PodTemplateSpec>,
    }
    let applied: Applied = serde_json::from_str(&child.last_applied()?).ok()?;
    applied.spec?.template
}

#[cfg(test)]
mod tests;
