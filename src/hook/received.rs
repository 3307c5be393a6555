//! A sync request as the hook received it: decoded narrowly, together with the body it was
//! decoded from.
//!
//! The decoded request skips what the hook does not read (managed fields, whole specs). Two
//! rare paths need exactly that, and read the body a second time (`src/keep/`): the
//! children an invalid spec keeps under server-side apply, and the old workload of a switch.
//! Keeping the body beside the request it was decoded from means the two cannot disagree.

use std::borrow::Cow;

use super::{DecodeError, SyncRequest, decode};

/// A sync request and the body it came in, if it came in one.
#[derive(Debug)]
pub struct Received<'a> {
    request: SyncRequest,
    body: Option<Cow<'a, [u8]>>,
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
        })
    }

    /// A request built in code rather than received (`render`'s first sync). It has no body:
    /// an observed child without a last-applied annotation cannot be kept.
    #[must_use]
    pub fn built(request: SyncRequest) -> Self {
        Self {
            request,
            body: None,
        }
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
}
