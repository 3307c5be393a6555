//! A minimal client of the Kubernetes API server from inside a pod, for the one request the agent
//! sends (a PATCH of its Pod's status): the standard in-cluster settings
//! (`KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT`, the service account's token and CA),
//! HTTPS through the hook's one HTTP client ([`crate::http_client`]): one connection per request,
//! every request bounded in time. Retrying is the caller's business.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper::{StatusCode, header};

use super::condition::bounded;
use crate::http_client::{Endpoint, ExchangeError, trusting};

/// Where a pod's service account token is mounted.
pub const TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
/// Where the cluster's CA is mounted next to it.
pub const CA_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
/// Largest answer read from the API server.
const MAX_ANSWER: usize = 64 * 1024;
/// Most bytes of the API server's message kept in an error.
const MAX_ERROR_TEXT: usize = 256;

/// Why the client cannot be built (the agent refuses to start).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// An in-cluster variable is missing.
    #[error("{0} is not set: the agent finds the API server the way a pod does")]
    MissingEnv(&'static str),
    /// `KUBERNETES_SERVICE_PORT` is not a port.
    #[error("KUBERNETES_SERVICE_PORT={0:?} is not a port number")]
    BadPort(String),
    /// `KUBERNETES_SERVICE_HOST` is neither a DNS name nor an IP address.
    #[error("KUBERNETES_SERVICE_HOST={0:?} is not a host name or an IP address")]
    BadHost(String),
    /// The CA file cannot be used.
    #[error("the API server's CA {path}: {reason}")]
    Ca {
        /// The CA file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The token cannot be read.
    #[error(transparent)]
    Token(RequestError),
}

/// Why one request failed.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The token file cannot be read (or is empty).
    #[error("the service account token {path}: {reason}")]
    Token {
        /// The token file.
        path: String,
        /// The error.
        reason: String,
    },
    /// The request could not be built (a token that is no header value).
    #[error("building the request: {0}")]
    Request(String),
    /// No answer: the connection, TLS, HTTP or the time limit.
    #[error("the API server: {0}")]
    Exchange(#[from] ExchangeError),
    /// The API server answered with an error.
    #[error("the API server answered {code}: {message}")]
    Status {
        /// The HTTP status code.
        code: u16,
        /// The start of its message (the `Status` object's `message`, else the body).
        message: String,
    },
}

/// The API server of the cluster the pod runs in.
#[derive(Clone, Debug)]
pub struct ApiClient {
    endpoint: Endpoint,
    token_file: PathBuf,
    timeout: Duration,
}

impl ApiClient {
    /// The API server named by `KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT`.
    ///
    /// # Errors
    /// A missing variable, an unusable CA file or an unreadable token.
    pub fn in_cluster(token: &Path, ca: &Path, timeout: Duration) -> Result<Self, ConfigError> {
        let var = |name| std::env::var(name).map_err(|_| ConfigError::MissingEnv(name));
        let host = var("KUBERNETES_SERVICE_HOST")?;
        let port = var("KUBERNETES_SERVICE_PORT")?;
        Self::new(&host, &port, token, ca, timeout)
    }

    /// The API server at `host`:`port` (an IPv6 host without brackets, as the variable has it).
    ///
    /// # Errors
    /// A bad host or port, an unusable CA file or an unreadable token.
    pub fn new(
        host: &str,
        port: &str,
        token: &Path,
        ca: &Path,
        timeout: Duration,
    ) -> Result<Self, ConfigError> {
        let port_number = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| ConfigError::BadPort(port.to_owned()))?;
        let tls = trusting(ca).map_err(|reason| ConfigError::Ca {
            path: ca.display().to_string(),
            reason,
        })?;
        let endpoint = Endpoint::new(host, port_number, Some(tls))
            .map_err(|_| ConfigError::BadHost(host.to_owned()))?;
        read_token(token).map_err(ConfigError::Token)?;
        Ok(Self {
            endpoint,
            token_file: token.to_owned(),
            timeout,
        })
    }

    /// `PATCH path` with `body` of `content_type`; the token is read again for each request
    /// (projected tokens rotate).
    ///
    /// # Errors
    /// The token, the connection, the time limit, or an answer other than 2xx.
    pub async fn patch(
        &self,
        path: &str,
        content_type: &str,
        body: String,
    ) -> Result<(), RequestError> {
        let token = read_token(&self.token_file)?;
        let request = patch_request(self.endpoint.authority(), path, &token, content_type, body)?;
        let (status, answer) = self
            .endpoint
            .send(request, MAX_ANSWER, self.timeout)
            .await?;
        answered(status, &answer)
    }
}

/// The request line and headers of a PATCH to the API server.
///
/// # Errors
/// A token that is not a valid header value.
pub fn patch_request(
    authority: &str,
    path: &str,
    token: &str,
    content_type: &str,
    body: String,
) -> Result<hyper::Request<String>, RequestError> {
    hyper::Request::builder()
        .method(hyper::Method::PATCH)
        .uri(path)
        .header(header::HOST, authority)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCEPT, "application/json")
        .header(
            header::USER_AGENT,
            concat!("memcached-hook-reload-agent/", env!("CARGO_PKG_VERSION")),
        )
        .body(body)
        .map_err(|e| RequestError::Request(e.to_string()))
}

/// `Ok` for a 2xx answer, else the status code and the start of the API server's message.
///
/// # Errors
/// Any status other than 2xx.
pub fn answered(status: StatusCode, body: &[u8]) -> Result<(), RequestError> {
    #[derive(serde::Deserialize)]
    struct Status {
        message: Option<String>,
    }
    if status.is_success() {
        return Ok(());
    }
    let text = serde_json::from_slice::<Status>(body)
        .ok()
        .and_then(|s| s.message)
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    Err(RequestError::Status {
        code: status.as_u16(),
        message: bounded(text.trim(), MAX_ERROR_TEXT).to_owned(),
    })
}

/// The token in `path`, without surrounding white space.
fn read_token(path: &Path) -> Result<String, RequestError> {
    let error = |reason: String| RequestError::Token {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(error("empty".into()));
    }
    Ok(token.to_owned())
}

#[cfg(test)]
pub(crate) mod tests;
