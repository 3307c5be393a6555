//! TLS (rustls) and mutual TLS, as a CompositeController's `caBundle` and `clientTLS` expect.
//!
//! The certificate, key and client CA come from files (a mounted Secret) and are reloaded when
//! they change: each new connection takes the current `ServerConfig` from an `ArcSwap`. A
//! failed reload keeps the previous configuration.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use thiserror::Error;

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

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, e))?;
    if certs.is_empty() {
        return Err(pem_error(path, "no certificate in the file"));
    }
    Ok(certs)
}

fn build(files: &TlsFiles) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let builder = match &files.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certificates(ca)? {
                roots.add(cert).map_err(|e| pem_error(ca, e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| TlsError::Rustls(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| pem_error(&files.key, e))?;
    let mut config = builder
        .with_single_cert(certificates(&files.cert)?, key)
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

type Stamps = Vec<Option<(SystemTime, u64)>>;

fn stamps(files: &TlsFiles) -> Stamps {
    [
        Some(&files.cert),
        Some(&files.key),
        files.client_ca.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|p| {
        std::fs::metadata(p)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())))
    })
    .collect()
}

/// The TLS configuration in force, reloaded from its files.
pub struct Tls {
    files: TlsFiles,
    config: ArcSwap<ServerConfig>,
    stamps: ArcSwap<Stamps>,
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
        let config = build(&files)?;
        let stamps = stamps(&files);
        Ok(Self {
            files,
            config: ArcSwap::from_pointee(config),
            stamps: ArcSwap::from_pointee(stamps),
        })
    }

    /// The configuration for the next connection.
    #[must_use]
    pub fn current(&self) -> Arc<ServerConfig> {
        self.config.load_full()
    }

    /// Rebuilds the configuration if a file changed; keeps the old one when that fails.
    pub fn reload_if_changed(&self) -> bool {
        let now = stamps(&self.files);
        if **self.stamps.load() == now {
            return false;
        }
        self.stamps.store(Arc::new(now));
        match build(&self.files) {
            Ok(config) => {
                self.config.store(Arc::new(config));
                tracing::info!("TLS configuration reloaded");
                true
            }
            Err(error) => {
                tracing::warn!(%error, "TLS configuration not reloaded; the previous one stays in force");
                false
            }
        }
    }

    /// Polls the files every `period` until the process ends.
    pub fn spawn_reloader(self: &Arc<Self>, period: Duration) {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                this.reload_if_changed();
            }
        });
    }
}
