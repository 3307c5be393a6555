//! What the controller last applied to an observed child, recovered from the child itself.
//!
//! Under Metacontroller's dynamic apply every child carries this hook's last answer in the
//! `metacontroller.k8s.io/last-applied-configuration` annotation. Under server-side apply it does
//! not; there the API server records, in `metadata.managedFields`, the set of fields each field
//! manager applied. The entry of operation `Apply` that owns the child's controller
//! ownerReference to the parent (Metacontroller adds it to every child it applies) is
//! Metacontroller's, whatever its `--apply-strategy-ssa-field-manager` is called. Its field set,
//! filled with the child's live values, is exactly what Metacontroller applied last (fields another
//! manager took over since are not in it), so applying it again changes nothing.
//!
//! Read for an invalid spec whose observed children have no last-applied annotation, and for
//! the pod template of a workload that keeps it ([`applied_template`]): the request body is
//! read a second time, each child lazily from its bytes ([`node`]): only the
//! levels the field set names are parsed, and its list keys are indexed once ([`fields`]), so
//! the work is linear in the size of the request and what is stored is about the size of the
//! answer.

mod fields;
mod node;

use serde::Deserialize;
use serde_json::value::RawValue;

use self::fields::Member;
use self::node::Node;
use crate::hook::{Child, Observed};

/// The parts of a sync request this module reads: the parent's UID and the children, as sent.
#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    parent: ParentRef<'a>,
    #[serde(default, borrow)]
    children: Observed<&'a RawValue>,
}

#[derive(Deserialize)]
struct ParentRef<'a> {
    #[serde(borrow)]
    metadata: ParentMeta<'a>,
}

#[derive(Deserialize)]
struct ParentMeta<'a> {
    #[serde(default, borrow)]
    uid: Option<std::borrow::Cow<'a, str>>,
}

/// Every observed child as the controller last applied it with server-side apply (its field set
/// with live values), or `None` when one of them has no such record, when there are no children,
/// when one is beyond what is read ([`fields::MAX_DEPTH`]) or when `body` is not a sync request.
pub(super) fn kept_children(body: &[u8]) -> Option<Vec<Child>> {
    let req: Request<'_> = serde_json::from_slice(body).ok()?;
    let uid = req.parent.metadata.uid?;
    if req.children.is_empty() {
        return None;
    }
    req.children
        .iter()
        .map(|child| {
            let text = applied(child, &uid)?;
            RawValue::from_string(text).ok().map(Child::Kept)
        })
        .collect()
}

/// The object the controller applied last to `child`, from its managed fields, as JSON.
fn applied(child: &RawValue, parent_uid: &str) -> Option<String> {
    let object = Node::object(child)?;
    let meta_raw = *object.get("metadata")?;
    let meta = Node::object(meta_raw)?;
    let fields = controller_fields(meta.get("managedFields")?, parent_uid)?;
    let set = Node::object(fields)?;
    // The identity is never in a field set; Metacontroller needs it.
    let identity = ["name", "namespace"]
        .into_iter()
        .filter_map(|key| Some((key, Member::Raw(meta.get(key)?))))
        .collect();
    let extras = vec![
        ("apiVersion", Member::Raw(object.get("apiVersion")?)),
        ("kind", Member::Raw(object.get("kind")?)),
        (
            "metadata",
            Member::Object(meta_raw, set.get("f:metadata").copied(), identity),
        ),
    ];
    let mut out = String::with_capacity(child.get().len().min(64 * 1024));
    fields::write(&mut out, &Member::Object(child, Some(fields), extras), 0)?;
    Some(out)
}

/// The pod template the controller applied last to a workload whose `metadata.managedFields`
/// and `spec` are `managed_fields` and `spec`, as JSON: `spec.template` reduced to the
/// controller's field set, with the live values. `None` when no single entry of operation
/// `Apply` owns the controller reference to the parent of `parent_uid`, when that entry names
/// no template, or when the template is beyond what is read ([`fields::MAX_DEPTH`]).
pub(super) fn applied_template(
    managed_fields: &RawValue,
    spec: &RawValue,
    parent_uid: &str,
) -> Option<String> {
    let fields = controller_fields(managed_fields, parent_uid)?;
    let set = Node::object(Node::object(fields)?.get("f:spec")?)?;
    let template_set = *set.get("f:template")?;
    let template = *Node::object(spec)?.get("template")?;
    let mut out = String::with_capacity(template.get().len().min(64 * 1024));
    fields::write(&mut out, &Member::Projected(template, template_set), 0)?;
    Some(out)
}

/// The field set of the one `Apply` entry of `managed_fields` that owns the controller
/// reference to the parent of `parent_uid`; `None` when there is none, or more than one.
fn controller_fields<'a>(managed_fields: &'a RawValue, parent_uid: &str) -> Option<&'a RawValue> {
    let Node::Array(entries) = Node::parse(managed_fields)? else {
        return None;
    };
    let mut owners = entries.into_iter().filter_map(|e| {
        let entry = Node::object(e)?;
        let is = |key: &str, wanted: &str| {
            entry
                .get(key)
                .and_then(|v| node::string(v))
                .is_some_and(|v| v == wanted)
        };
        let fields = *entry.get("fieldsV1")?;
        (is("operation", "Apply")
            && is("fieldsType", "FieldsV1")
            && owns_controller_ref(fields, parent_uid))
        .then_some(fields)
    });
    let fields = owners.next()?;
    if owners.next().is_some() {
        return None; // two managers claim the controller reference: not ours to guess
    }
    Some(fields)
}

/// Whether a field set owns `metadata.ownerReferences[uid=parent_uid]`.
fn owns_controller_ref(fields: &RawValue, parent_uid: &str) -> bool {
    let refs = Node::object(fields)
        .and_then(|f| Node::object(f.get("f:metadata")?))
        .and_then(|m| Node::object(m.get("f:ownerReferences")?));
    refs.is_some_and(|refs| {
        refs.keys().any(|k| {
            k.strip_prefix("k:")
                .and_then(|key| {
                    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(key).ok()
                })
                .is_some_and(|key| {
                    key.get("uid").and_then(serde_json::Value::as_str) == Some(parent_uid)
                })
        })
    })
}

#[cfg(test)]
mod tests;
