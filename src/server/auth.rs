//! Caller authentication, as a CompositeController's `webhook.authorization` (any scheme, e.g.
//! `Authorization: Bearer <token>`) and `webhook.basicAuth` send it.
//!
//! Credentials come from files (mounted Secrets) and are reloaded when the files change; a
//! failed reload keeps the previous credentials. Requests read the current credentials through
//! an `ArcSwap`, without a lock. Nothing secret is ever logged or echoed: a rejected request
//! gets a bare 401.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use subtle::ConstantTimeEq as _;
use thiserror::Error;

use super::ApiError;
use super::reload::{self, Reloading};
use crate::mounted::{Snapshot, WatchError};

/// Where the credentials live.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthFiles {
    /// File holding the token expected after the scheme (`Authorization: Bearer <token>`).
    pub token: Option<PathBuf>,
    /// File holding the basic-auth user name (a Secret's `username` key).
    pub basic_username: Option<PathBuf>,
    /// File holding the basic-auth password (a Secret's `password` key).
    pub basic_password: Option<PathBuf>,
}

impl AuthFiles {
    /// Whether any credential is configured.
    #[must_use]
    pub fn any(&self) -> bool {
        self.token.is_some() || self.basic_username.is_some() || self.basic_password.is_some()
    }

    fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        [&self.token, &self.basic_username, &self.basic_password]
            .into_iter()
            .flatten()
    }
}

/// Why credentials could not be loaded (the message names the file, never its content).
#[derive(Debug, Error)]
pub enum AuthError {
    /// A file could not be read.
    #[error("cannot read credential file {0}")]
    Read(#[from] WatchError),
    /// A file is empty.
    #[error("credential file {0} is empty")]
    Empty(PathBuf),
    /// A file holds what no client can send: a control character (other than a tab) inside,
    /// or, in the token file, a byte beyond ASCII (a header value the hook reads as text).
    #[error(
        "credential file {path} holds {what}, which no client can send in an Authorization header"
    )]
    Unsendable {
        /// The file.
        path: PathBuf,
        /// What it holds (never the byte's value or position).
        what: &'static str,
    },
    /// Only one of the basic-auth files is configured.
    #[error("basic auth needs both a username file and a password file")]
    HalfBasic,
}

/// The credentials in force.
#[derive(Default)]
struct Credentials {
    /// The token, compared after the scheme.
    token: Option<Vec<u8>>,
    /// `username:password`.
    basic: Option<Vec<u8>>,
}

/// Whether a credential is sent as it is (the token, after the scheme) or base64-encoded
/// (basic auth's user name and password, which may be any UTF-8).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sent {
    AsHeaderText,
    Base64,
}

/// What in `bytes` no client can send, if anything: Metacontroller's Go client refuses a header
/// with a control character, and the hook reads a header value as visible ASCII.
fn unsendable(bytes: &[u8], sent: Sent) -> Option<&'static str> {
    if bytes.iter().any(|b| b.is_ascii_control() && *b != b'\t') {
        Some("a control character (a newline, a NUL, ...)")
    } else if sent == Sent::AsHeaderText && !bytes.is_ascii() {
        Some("a byte beyond ASCII")
    } else {
        None
    }
}

/// The credential in `content`, read from the file `path`.
fn secret(path: &Path, content: &[u8], sent: Sent) -> Result<Vec<u8>, AuthError> {
    // Metacontroller sends the Secret's value with surrounding whitespace trimmed (token, username
    // and password alike), and files written by hand often end with a newline: trim the same way.
    let bytes = content.trim_ascii();
    if bytes.is_empty() {
        return Err(AuthError::Empty(path.to_owned()));
    }
    if let Some(what) = unsendable(bytes, sent) {
        return Err(AuthError::Unsendable {
            path: path.to_owned(),
            what,
        });
    }
    Ok(bytes.to_vec())
}

/// The credentials from the contents of `files` (in [`AuthFiles::paths`] order), read at one
/// version of the volume.
fn load(files: &AuthFiles, contents: &Snapshot) -> Result<Credentials, AuthError> {
    let mut next = contents.contents.iter();
    let mut take = |path: &Option<PathBuf>, sent| {
        path.as_deref()
            .map(|path| secret(path, next.next().map_or(&[][..], Vec::as_slice), sent))
            .transpose()
    };
    let token = take(&files.token, Sent::AsHeaderText)?;
    let user = take(&files.basic_username, Sent::Base64)?;
    let password = take(&files.basic_password, Sent::Base64)?;
    let basic = match (user, password) {
        (Some(mut pair), Some(password)) => {
            pair.push(b':');
            pair.extend(password);
            Some(pair)
        }
        (None, None) => None,
        _ => return Err(AuthError::HalfBasic),
    };
    Ok(Credentials { token, basic })
}

/// Comparison whose time does not depend on where equal-length inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

/// Checks `Authorization` headers against credentials read from files.
pub struct Authenticator {
    files: AuthFiles,
    credentials: Reloading<Credentials>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// Reads the credential files.
    ///
    /// # Errors
    /// A file that cannot be read or is empty, or half a basic-auth pair.
    pub fn new(files: AuthFiles) -> Result<Self, AuthError> {
        let credentials = Reloading::new(files.paths().cloned().collect(), "credentials", |c| {
            load(&files, c)
        })?;
        Ok(Self { files, credentials })
    }

    /// Re-reads the files if they changed; keeps the old credentials when they cannot be read.
    /// Returns whether new credentials are in force.
    pub fn reload_if_changed(&self) -> bool {
        self.credentials.reload_if_changed(|c| load(&self.files, c))
    }

    /// Polls the files every `period` until the process ends.
    pub fn spawn_reloader(self: &Arc<Self>, period: Duration) {
        reload::poll(self, period, Self::reload_if_changed);
    }

    /// Whether an `Authorization` header value carries valid credentials.
    #[must_use]
    pub fn allows(&self, header: Option<&HeaderValue>) -> bool {
        let Some((scheme, value)) = header
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.trim().split_once(' '))
        else {
            return false;
        };
        let value = value.trim().as_bytes();
        let credentials = self.credentials.current();
        if scheme.eq_ignore_ascii_case("basic")
            && let Some(expected) = &credentials.basic
        {
            return base64::engine::general_purpose::STANDARD
                .decode(value)
                .is_ok_and(|pair| constant_time_eq(&pair, expected));
        }
        credentials
            .token
            .as_deref()
            .is_some_and(|token| constant_time_eq(value, token))
    }
}

/// Middleware: a request without valid credentials gets a 401 and goes no further.
pub async fn require(
    State(auth): State<Arc<Authenticator>>,
    request: Request,
    next: Next,
) -> Response {
    if auth.allows(request.headers().get(header::AUTHORIZATION)) {
        return next.run(request).await;
    }
    let mut response =
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", None).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer, Basic realm=\"memcached-hook\""),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn credentials_are_trimmed_like_metacontroller_trims_them() {
        let path = Path::new("/token");
        for (content, want) in [
            ("tok\n", Some("tok")),
            (" \ttok en\r\n", Some("tok en")),
            ("tok", Some("tok")),
            (" \n", None),
        ] {
            let got = secret(path, content.as_bytes(), Sent::AsHeaderText).ok();
            assert_eq!(got.as_deref(), want.map(str::as_bytes), "{content:?}");
        }
    }

    #[test]
    fn credentials_no_client_can_send_are_refused() {
        let path = Path::new("/credential");
        for (content, sent, refused) in [
            ("tok\nen\n", Sent::AsHeaderText, true),
            ("tok\0en", Sent::AsHeaderText, true),
            ("tok\ren", Sent::Base64, true),
            ("t\u{f6}ken", Sent::AsHeaderText, true),
            ("p\u{e4}ssword", Sent::Base64, false),
            ("tok\ten", Sent::AsHeaderText, false),
        ] {
            match secret(path, content.as_bytes(), sent) {
                Err(e @ AuthError::Unsendable { .. }) => {
                    assert!(refused, "{content:?}: {e}");
                    let text = e.to_string();
                    assert!(
                        text.contains("no client can send") && !text.contains("tok"),
                        "{text}"
                    );
                }
                other => assert!(!refused && other.is_ok(), "{content:?}"),
            }
        }
    }
}
