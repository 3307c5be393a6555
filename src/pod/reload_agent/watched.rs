//! One watched group of files and what became of its latest content.

use std::path::PathBuf;

use super::What;
use super::condition::Report;
use crate::mounted::{self, Group, Snapshot};
use crate::pod::memcached::AdminError;

/// Most polls between two delivery attempts after repeated failures.
const MAX_BACKOFF_POLLS: u64 = 64;

/// One watched group and what became of its content.
pub(super) struct Watched {
    pub(super) group: Group,
    /// The content memcached has, as far as the agent knows; `None` until the first delivery
    /// (the agent may start before memcached, or restart after a rotation it never delivered).
    applied: Option<[u8; 32]>,
    /// Content refused by the checks: not retried until it changes.
    refused: Option<[u8; 32]>,
    failures: u32,
    next_poll: u64,
    last_error: Option<String>,
}

impl Watched {
    pub(super) fn new(files: Vec<PathBuf>) -> Result<Self, mounted::WatchError> {
        let group = Group::new(files);
        group.snapshot()?;
        Ok(Self {
            group,
            applied: None,
            refused: None,
            failures: 0,
            next_poll: 0,
            last_error: None,
        })
    }

    /// New content to act on now, if any. A read error is logged once per distinct error.
    pub(super) fn pending(&mut self, poll: u64, what: What) -> Option<Snapshot> {
        match self.group.snapshot() {
            Ok(s) => {
                self.last_error = None;
                let new = Some(s.digest) != self.applied && Some(s.digest) != self.refused;
                (new && poll >= self.next_poll).then_some(s)
            }
            Err(e) => {
                let text = e.to_string();
                if self.last_error.as_deref() != Some(text.as_str()) {
                    tracing::warn!(what = what.label(), error = %text, "cannot read the mounted files; memcached keeps what it has");
                    self.last_error = Some(text);
                }
                None
            }
        }
    }

    fn succeeded(&mut self, s: &Snapshot) {
        self.applied = Some(s.digest);
        self.refused = None;
        self.failures = 0;
        self.next_poll = 0;
    }

    /// Records `s` as refused: not delivered again until the content changes.
    pub(super) fn refused(&mut self, s: &Snapshot) {
        self.refused = Some(s.digest);
    }

    /// Records what became of delivering `snapshot`: memcached took it; memcached was not
    /// reachable yet before the first delivery (it is starting: no failure); or a failure,
    /// retried with a back-off. Whether memcached took it.
    pub(super) fn settle(
        &mut self,
        snapshot: &Snapshot,
        poll: u64,
        report: &mut Report,
        what: What,
        result: Result<(), AdminError>,
    ) -> bool {
        let (took, kept) = match what {
            What::Tls => (
                "reload succeeded: memcached serves the new certificate to new connections",
                "reload failed; memcached keeps the previous certificate",
            ),
            What::Auth => (
                "reload succeeded: memcached accepts the new auth file",
                "reload failed; memcached keeps the previous auth file",
            ),
            What::Routes => (
                "reload succeeded: the proxy loaded the new routes",
                "reload failed; the proxy keeps the previous routes",
            ),
        };
        let what_label = what.label();
        match result {
            Ok(()) => {
                self.succeeded(snapshot);
                report.outcome(what, Ok(()));
                tracing::info!(what = what_label, "{took}");
                true
            }
            Err(e) if self.applied.is_none() && e.unreachable() => {
                tracing::debug!(what = what_label, error = %e, "memcached not reachable yet");
                false
            }
            Err(e) => {
                self.failed(poll);
                report.outcome(what, Err(&e));
                let retry_in_polls = self.next_poll - poll;
                tracing::error!(what = what_label, error = %e, retry_in_polls, "{kept}");
                false
            }
        }
    }

    fn failed(&mut self, poll: u64) {
        self.failures = self.failures.saturating_add(1);
        self.next_poll = poll + (1u64 << self.failures.min(6)).min(MAX_BACKOFF_POLLS);
    }
}
