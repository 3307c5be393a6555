//! One HTTP/1.1 request on a connection of its own, plain or over TLS (rustls with ring),
//! bounded in time and in the size of the answer read: the one client of the hook's own
//! programs, for the reload agent's PATCH of its Pod and for `memcached-hook probe`. Retrying
//! is the caller's business.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Limited};
use hyper::StatusCode;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};

/// Why one exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// No TCP connection.
    #[error("connecting to {authority}: {source}")]
    Connect {
        /// host:port.
        authority: String,
        /// The error.
        source: std::io::Error,
    },
    /// The TLS handshake failed (e.g. a server certificate the CA did not sign).
    #[error("TLS handshake with {authority}: {source}")]
    Tls {
        /// host:port.
        authority: String,
        /// The error.
        source: std::io::Error,
    },
    /// HTTP failed midway, or the answer was longer than allowed.
    #[error("HTTP with {authority}: {reason}")]
    Http {
        /// host:port.
        authority: String,
        /// What went wrong.
        reason: String,
    },
    /// No complete answer in time.
    #[error("no answer from {authority} within {limit:?}")]
    Timeout {
        /// host:port.
        authority: String,
        /// The time allowed.
        limit: Duration,
    },
}

/// Where requests go: a host and port, and with TLS the name the certificate must carry.
#[derive(Clone)]
pub struct Endpoint {
    host: String,
    port: u16,
    authority: String,
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("authority", &self.authority)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// A status and the body read.
pub type Answer = (StatusCode, hyper::body::Bytes);

impl Endpoint {
    /// `host` (an IPv6 address without brackets) at `port`; over TLS with `tls`, checking the
    /// certificate for `host`.
    ///
    /// # Errors
    /// With TLS, a host that is neither a DNS name nor an IP address (the text of the error).
    pub fn new(
        host: &str,
        port: u16,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Self, String> {
        let tls = match tls {
            Some(config) => {
                let name = ServerName::try_from(host.to_owned())
                    .map_err(|_| format!("{host:?} is not a host name or an IP address"))?;
                Some((tokio_rustls::TlsConnector::from(config), name))
            }
            None => None,
        };
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Ok(Self {
            host: host.to_owned(),
            port,
            authority,
            tls,
        })
    }

    /// `host:port` as a Host header writes it.
    #[must_use]
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// Sends `request` and reads the answer: its status and at most `max_body` bytes of body,
    /// all within `limit`.
    ///
    /// # Errors
    /// The connection, the TLS handshake, HTTP, a longer body, or the time limit.
    pub async fn send(
        &self,
        request: hyper::Request<String>,
        max_body: usize,
        limit: Duration,
    ) -> Result<Answer, ExchangeError> {
        tokio::time::timeout(limit, self.exchange(request, max_body))
            .await
            .map_err(|_| ExchangeError::Timeout {
                authority: self.authority.clone(),
                limit,
            })?
    }

    async fn exchange(
        &self,
        request: hyper::Request<String>,
        max_body: usize,
    ) -> Result<Answer, ExchangeError> {
        let authority = || self.authority.clone();
        let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|source| ExchangeError::Connect {
                authority: authority(),
                source,
            })?;
        match &self.tls {
            None => self.http(tcp, request, max_body).await,
            Some((connector, name)) => {
                let stream = connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|source| ExchangeError::Tls {
                        authority: authority(),
                        source,
                    })?;
                self.http(stream, request, max_body).await
            }
        }
    }

    async fn http(
        &self,
        stream: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
        request: hyper::Request<String>,
        max_body: usize,
    ) -> Result<Answer, ExchangeError> {
        let http = |reason: String| ExchangeError::Http {
            authority: self.authority.clone(),
            reason,
        };
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| http(e.to_string()))?;
        let exchange = async {
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| http(e.to_string()))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), max_body)
                .collect()
                .await
                .map_err(|e| http(format!("reading the answer: {e}")))?;
            Ok((status, body.to_bytes()))
        };
        tokio::pin!(exchange, connection);
        tokio::select! {
            biased;
            answer = &mut exchange => answer,
            closed = &mut connection => {
                closed.map_err(|e| http(e.to_string()))?;
                exchange.await
            }
        }
    }
}

/// A TLS client configuration that trusts only the certificates in the PEM file `ca`.
///
/// # Errors
/// An unreadable file, no certificate in it, or one that is no usable trust anchor.
pub fn trusting(ca: &Path) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    let certificates = CertificateDer::pem_file_iter(ca)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| e.to_string())?;
    for certificate in certificates {
        roots
            .add(certificate)
            .map_err(|e| format!("not a CA certificate: {e}"))?;
    }
    if roots.is_empty() {
        return Err("no certificate in the file".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS versions: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
