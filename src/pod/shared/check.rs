//! What the pod programs check before material reaches memcached (the reload agent, the auth-file
//! step) and the logins they read (the stats exporter too). memcached 1.6.18 swaps the
//! certificate into its TLS context before it loads the key, so `refresh_certs` with a key that
//! does not match leaves every new TLS handshake failing; and an empty auth file, reloaded on
//! SIGHUP, lets nobody in. Neither must reach memcached.

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// memcached reads at most this many `user:password` lines (authfile.c `MAX_ENTRIES`).
const MAX_AUTH_ENTRIES: usize = 8;
/// memcached reads a line in chunks of this many bytes (authfile.c `MAX_ENTRY_LEN`).
const MAX_AUTH_LINE: usize = 255;

/// Why new material is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CheckError {
    /// The certificate chain does not parse or is empty.
    #[error("certificate chain: {0}")]
    Chain(String),
    /// The private key does not parse.
    #[error("private key: {0}")]
    Key(String),
    /// The key is not the certificate's.
    #[error("the private key does not belong to the certificate: {0}")]
    Mismatch(String),
    /// The CA bundle does not parse or is empty.
    #[error("CA bundle: {0}")]
    Ca(String),
    /// The auth file is not one memcached would load usefully.
    #[error("auth file: {0}")]
    Auth(String),
}

/// A user and password memcached's ASCII authentication accepts.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user.
    pub user: String,
    /// The password (never printed).
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("no certificate in PEM".to_owned());
    }
    Ok(certs)
}

/// Checks a certificate chain and its key (and the client CA bundle, when there is one).
///
/// # Errors
/// The first problem found.
pub fn tls(chain: &[u8], key: &[u8], ca: Option<&[u8]>) -> Result<(), CheckError> {
    let certs = certificates(chain).map_err(CheckError::Chain)?;
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| CheckError::Key(e.to_string()))?;
    let provider = rustls::crypto::ring::default_provider();
    let private = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| CheckError::Key(e.to_string()))?;
    rustls::sign::CertifiedKey::new(certs, private)
        .keys_match()
        .map_err(|e| CheckError::Mismatch(e.to_string()))?;
    if let Some(ca) = ca {
        certificates(ca).map_err(CheckError::Ca)?;
    }
    Ok(())
}

/// Checks an auth file the way memcached reads it, and returns its first entry (the agent's own
/// login).
///
/// # Errors
/// An empty file, a line without `:`, or one memcached would split.
pub fn auth_file(content: &[u8]) -> Result<Credentials, CheckError> {
    let text = std::str::from_utf8(content).map_err(|_| CheckError::Auth("not UTF-8".into()))?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    let mut first = None;
    for (index, line) in text.split('\n').enumerate().take(MAX_AUTH_ENTRIES) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let number = index + 1;
        if line.len() > MAX_AUTH_LINE {
            return Err(CheckError::Auth(format!(
                "line {number} is longer than {MAX_AUTH_LINE} bytes"
            )));
        }
        let Some((user, password)) = line.split_once(':') else {
            return Err(CheckError::Auth(format!(
                "line {number} is not user:password"
            )));
        };
        if first.is_none() {
            if user.is_empty() || password.is_empty() || line.contains([' ', '\t']) {
                return Err(CheckError::Auth(format!(
                    "line {number}: user and password must be non-empty and without blanks"
                )));
            }
            first = Some(Credentials {
                user: user.to_owned(),
                password: password.to_owned(),
            });
        }
    }
    first.ok_or_else(|| CheckError::Auth("no user:password line".into()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn pair(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_matching_pair_passes_and_a_foreign_key_is_refused() {
        let (cert_a, key_a) = pair("a");
        let (cert_b, key_b) = pair("b");
        assert_eq!(tls(cert_a.as_bytes(), key_a.as_bytes(), None), Ok(()));
        assert_eq!(
            tls(cert_b.as_bytes(), key_b.as_bytes(), Some(cert_a.as_bytes())),
            Ok(())
        );
        assert!(matches!(
            tls(cert_a.as_bytes(), key_b.as_bytes(), None),
            Err(CheckError::Mismatch(_))
        ));
    }

    #[test]
    fn garbage_is_refused_by_part() {
        let (cert, key) = pair("a");
        assert!(matches!(
            tls(b"", key.as_bytes(), None),
            Err(CheckError::Chain(_))
        ));
        assert!(matches!(
            tls(cert.as_bytes(), b"nope", None),
            Err(CheckError::Key(_))
        ));
        assert!(matches!(
            tls(cert.as_bytes(), key.as_bytes(), Some(b"x")),
            Err(CheckError::Ca(_))
        ));
        // Truncated in the middle of the base64, as a half-written file would be.
        let half = &cert.as_bytes()[..cert.len() / 2];
        assert!(tls(half, key.as_bytes(), None).is_err());
    }

    #[test]
    fn auth_files() {
        let ok = auth_file(b"alice:s3cret\nbob:other\n").unwrap();
        assert_eq!(
            (ok.user.as_str(), ok.password.as_str()),
            ("alice", "s3cret")
        );
        assert_eq!(auth_file(b"alice:pw").unwrap().password, "pw");
        assert_eq!(auth_file(b"alice:pw\r\n").unwrap().password, "pw");
        for bad in [
            &b""[..],
            b"\n",
            b"alice\n",
            b"alice:pw\n\nbob:x\n",
            b"al ice:pw\n",
            b":pw\n",
        ] {
            assert!(
                auth_file(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(
            !format!("{ok:?}").contains("s3cret"),
            "the password is never printed"
        );
    }
}
