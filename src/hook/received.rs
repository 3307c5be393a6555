//! A sync request as the hook received it: decoded narrowly, together with the body it was
//! decoded from.
//!
//! The decoded request skips what the hook does not read (managed fields, whole specs). Three
//! paths need exactly that, and read the body a second time (`src/keep/`): the children an
//! invalid spec keeps under server-side apply, the leaving workloads of a switch, and under
//! server-side apply the pod template a workload keeps (what Metacontroller applied). Keeping the body beside the request it was decoded from means the two cannot
//! disagree. The observed children as sent ([`Sent`]) are read from the body at most once per
//! request, on the first call that needs them, however many children are kept from them.
//!
//! A request may also carry a flag its server raises when the request's time has run out
//! ([`Received::with_stop`]): the work that repeats per kept child checks it and stops.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{DecodeError, Observed, ObservedChild, SyncRequest, decode};

/// A sync request and the body it came in, if it came in one.
#[derive(Debug)]
pub struct Received<'a> {
    request: SyncRequest,
    body: Option<Cow<'a, [u8]>>,
    /// The observed children as the body sends them, sorted by identity; read on first use.
    sent: OnceCell<Option<Vec<Sent>>>,
    /// The related objects as the body sends them, sorted by identity; read on first use.
    sent_related: OnceCell<Option<Vec<Sent>>>,
    /// Raised when the answer is no longer awaited.
    stop: Option<Arc<AtomicBool>>,
}

/// An observed child as the body sends it: its identity, and its labels, managed fields and
/// whole spec unread.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    /// Its `apiVersion`.
    pub api_version: String,
    /// Its `kind`.
    pub kind: String,
    /// Its name and labels.
    pub metadata: SentMeta,
    /// Its whole spec, as sent.
    #[serde(default)]
    pub spec: Option<Box<RawValue>>,
}

/// The metadata of a [`Sent`] child that a kept child repeats.
#[derive(Debug, Deserialize)]
pub struct SentMeta {
    /// Its name.
    pub name: String,
    /// Its labels, as sent.
    #[serde(default)]
    pub labels: Option<Box<RawValue>>,
    /// Its `managedFields`, as sent (server-side apply's record of who applied what).
    #[serde(default, rename = "managedFields")]
    pub managed_fields: Option<Box<RawValue>>,
}

impl Sent {
    fn identity(&self) -> (&str, &str, &str) {
        (&self.api_version, &self.kind, &self.metadata.name)
    }
}

impl<'a> Received<'a> {
    /// Decodes `body` as the server does ([`decode`]) and keeps it beside the request.
    ///
    /// # Errors
    /// As [`decode`].
    pub fn decode(body: impl Into<Cow<'a, [u8]>>) -> Result<Self, DecodeError> {
        let body = body.into();
        let request = decode(&body)?;
        Ok(Self {
            request,
            body: Some(body),
            sent: OnceCell::new(),
            sent_related: OnceCell::new(),
            stop: None,
        })
    }

    /// A request built in code rather than received (`render`'s first sync). It has no body:
    /// an observed child without a last-applied annotation cannot be kept.
    #[must_use]
    pub fn built(request: SyncRequest) -> Self {
        Self {
            request,
            body: None,
            sent: OnceCell::new(),
            sent_related: OnceCell::new(),
            stop: None,
        }
    }

    /// The same request, whose work stops once `stop` is raised (its answer is then no longer
    /// awaited).
    #[must_use]
    pub fn with_stop(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Whether the answer to this request is no longer awaited: the work that repeats per
    /// child stops.
    #[must_use]
    pub fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// The decoded request.
    #[must_use]
    pub fn request(&self) -> &SyncRequest {
        &self.request
    }

    /// The body as received, if there was one.
    #[must_use]
    pub fn body(&self) -> Option<&[u8]> {
        self.body.as_deref()
    }

    /// The observed `child` as the body sends it; `None` when there is no body or it holds no
    /// such child. The body is read for it once per request, on the first call.
    #[must_use]
    pub fn sent(&self, child: &ObservedChild) -> Option<&Sent> {
        let sent = self
            .sent
            .get_or_init(|| sent_member(self.body()?, Member::Children));
        let identity = (
            child.api_version.as_str(),
            child.kind.as_str(),
            child.metadata.name.as_str(),
        );
        find(sent.as_deref()?, identity)
    }

    /// The related object of `identity` (`apiVersion`, `kind`, name) as the body sends it;
    /// `None` when there is no body or it holds no such object. The body is read for it once
    /// per request, on the first call.
    #[must_use]
    pub fn sent_related(&self, identity: (&str, &str, &str)) -> Option<&Sent> {
        let sent = self
            .sent_related
            .get_or_init(|| sent_member(self.body()?, Member::Related));
        find(sent.as_deref()?, identity)
    }
}

/// The member of the body whose objects are read as [`Sent`].
#[derive(Clone, Copy)]
enum Member {
    /// `children`: the observed children.
    Children,
    /// `related`: the related objects.
    Related,
}

/// Every object of `member` that `body` sends, sorted by identity; `None` when it does not read.
fn sent_member(body: &[u8], member: Member) -> Option<Vec<Sent>> {
    #[derive(Deserialize)]
    struct Children {
        #[serde(default)]
        children: Observed<Sent>,
    }
    #[derive(Deserialize)]
    struct Related {
        #[serde(default)]
        related: Observed<Sent>,
    }
    let mut sent = match member {
        Member::Children => serde_json::from_slice::<Children>(body).ok()?.children.0,
        Member::Related => serde_json::from_slice::<Related>(body).ok()?.related.0,
    };
    sent.sort_by(|a, b| a.identity().cmp(&b.identity()));
    Some(sent)
}

/// The object of `identity` in `sent` (sorted by identity).
fn find<'s>(sent: &'s [Sent], identity: (&str, &str, &str)) -> Option<&'s Sent> {
    let first = sent.partition_point(|s| s.identity() < identity);
    sent.get(first).filter(|s| s.identity() == identity)
}
