//! TLS (rustls) and mutual TLS, as a CompositeController's `caBundle` and `clientTLS` expect.
//!
//! The certificate, key and client CA come from files (a mounted Secret) and are reloaded when
//! they change: each new connection takes the current `ServerConfig` from an `ArcSwap`. A
//! failed reload keeps the previous configuration.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use thiserror::Error;

use super::reload::{self, Reloading};
use crate::mounted::{Snapshot, WatchError};

/// Where the TLS material lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// PEM CA bundle; when set, clients must present a certificate it signed.
    pub client_ca: Option<PathBuf>,
}

/// Why the TLS configuration could not be built (names files, never key material).
#[derive(Debug, Error)]
pub enum TlsError {
    /// A PEM file could not be read or parsed.
    #[error("{path}: {message}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read.
    #[error(transparent)]
    Read(#[from] WatchError),
    /// rustls refused the material.
    #[error("TLS configuration: {0}")]
    Rustls(String),
}

fn pem_error(path: &Path, error: impl std::fmt::Display) -> TlsError {
    TlsError::Pem {
        path: path.to_owned(),
        message: error.to_string(),
    }
}

/// The certificates in `pem`, read from the file `path`.
fn certificates(path: &Path, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, e))?;
    if certs.is_empty() {
        return Err(pem_error(path, "no certificate in the file"));
    }
    Ok(certs)
}

/// The configuration from the contents of `files` (certificate, key, then the client CA), read
/// at one version of the volume, so a certificate never meets the previous key.
fn build(files: &TlsFiles, contents: &Snapshot) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let builder = match &files.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certificates(ca, contents.file(2))? {
                roots.add(cert).map_err(|e| pem_error(ca, e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| TlsError::Rustls(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let key =
        PrivateKeyDer::from_pem_slice(contents.file(1)).map_err(|e| pem_error(&files.key, e))?;
    let mut config = builder
        .with_single_cert(certificates(&files.cert, contents.file(0))?, key)
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The TLS configuration in force, rebuilt from its files when they change.
pub struct Tls {
    files: TlsFiles,
    config: Reloading<ServerConfig>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Reads the files and builds the configuration.
    ///
    /// # Errors
    /// Unreadable or invalid PEM, or material rustls refuses.
    pub fn new(files: TlsFiles) -> Result<Self, TlsError> {
        let paths = [
            Some(&files.cert),
            Some(&files.key),
            files.client_ca.as_ref(),
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
        let config = Reloading::new(paths, "TLS configuration", |c| build(&files, c))?;
        Ok(Self { files, config })
    }

    /// The configuration for the next connection.
    #[must_use]
    pub fn current(&self) -> Arc<ServerConfig> {
        self.config.current()
    }

    /// Rebuilds the configuration if a file changed; keeps the old one when that fails.
    pub fn reload_if_changed(&self) -> bool {
        self.config.reload_if_changed(|c| build(&self.files, c))
    }

    /// Polls the files every `period` until the process ends.
    pub fn spawn_reloader(self: &Arc<Self>, period: Duration) {
        reload::poll(self, period, Self::reload_if_changed);
    }
}
