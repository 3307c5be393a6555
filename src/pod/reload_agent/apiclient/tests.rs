//! The client against a TLS server on loopback that records the request and answers as told.

use std::sync::Arc;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

/// A server certificate for 127.0.0.1 and its CA file, in a directory of their own.
pub(crate) struct Server {
    dir: PathBuf,
    config: Arc<rustls::ServerConfig>,
}

impl Server {
    pub(crate) fn new(tag: &str) -> Self {
        let (cert, key) = crate::pod::shared::check::tests::pair("127.0.0.1");
        let dir = std::env::temp_dir().join(format!("apiclient-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.crt"), &cert).unwrap();
        std::fs::write(dir.join("token"), "first-token\n").unwrap();
        let certs = vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()];
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        Self {
            dir,
            config: Arc::new(config),
        }
    }

    pub(crate) fn client(&self, port: u16) -> ApiClient {
        ApiClient::new(
            "127.0.0.1",
            &port.to_string(),
            &self.dir.join("token"),
            &self.dir.join("ca.crt"),
            Duration::from_secs(5),
        )
        .unwrap()
    }

    /// Serves one connection: answers `status` with the JSON `body`, returns the raw request.
    pub(crate) async fn once(
        &self,
        status: &str,
        body: &str,
    ) -> (u16, tokio::task::JoinHandle<String>) {
        let (port, task) = self.serve(vec![(status.to_owned(), body.to_owned())]).await;
        (
            port,
            tokio::spawn(async move { task.await.unwrap().remove(0) }),
        )
    }

    /// Serves one connection per `(status, body)` in turn; returns the raw requests.
    pub(crate) async fn serve(
        &self,
        answers: Vec<(String, String)>,
    ) -> (u16, tokio::task::JoinHandle<Vec<String>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(&self.config));
        let task = tokio::spawn(async move {
            let mut requests = Vec::new();
            for (status, body) in answers {
                let (tcp, _) = listener.accept().await.unwrap();
                let mut tls = acceptor.accept(tcp).await.unwrap();
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while !complete(&seen) {
                    let n = tls.read(&mut buf).await.unwrap();
                    assert!(n > 0, "the client closed early");
                    seen.extend_from_slice(&buf[..n]);
                }
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                tls.write_all(answer.as_bytes()).await.unwrap();
                tls.shutdown().await.unwrap();
                requests.push(String::from_utf8(seen).unwrap());
            }
            requests
        });
        (port, task)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether `seen` holds the head and as much body as its Content-Length says.
fn complete(seen: &[u8]) -> bool {
    let text = String::from_utf8_lossy(seen);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map_or(0, |n| n.parse::<usize>().unwrap());
    body.len() >= length
}

#[tokio::test]
async fn the_patch_goes_out_as_built_and_a_2xx_is_success() {
    let server = Server::new("ok");
    let (port, task) = server.once("200 OK", "{}").await;
    let client = server.client(port);
    std::fs::write(server.dir.join("token"), "rotated-token\n").unwrap();
    client
        .patch(
            "/api/v1/namespaces/ns/pods/p/status",
            "application/strategic-merge-patch+json",
            r#"{"status":{}}"#.into(),
        )
        .await
        .unwrap();
    let request = task
        .await
        .unwrap()
        .replace("\r\n", "\n")
        .replace(&port.to_string(), "PORT")
        .replace(env!("CARGO_PKG_VERSION"), "VERSION");
    insta::assert_snapshot!(request, @r#"
    PATCH /api/v1/namespaces/ns/pods/p/status HTTP/1.1
    host: 127.0.0.1:PORT
    authorization: Bearer rotated-token
    content-type: application/strategic-merge-patch+json
    accept: application/json
    user-agent: memcached-hook-reload-agent/VERSION
    content-length: 13

    {"status":{}}
    "#);
}

#[tokio::test]
async fn an_error_answer_carries_the_code_and_the_apis_message() {
    let server = Server::new("forbidden");
    let (port, task) = server
        .once(
            "403 Forbidden",
            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"p\" is forbidden: no","reason":"Forbidden","code":403}"#,
        )
        .await;
    let err = server
        .client(port)
        .patch(
            "/api/v1/namespaces/ns/pods/p/status",
            "application/json",
            "{}".into(),
        )
        .await
        .unwrap_err();
    task.await.unwrap();
    assert_eq!(
        err.to_string(),
        r#"the API server answered 403: pods "p" is forbidden: no"#
    );
}

#[tokio::test]
async fn a_server_the_ca_did_not_sign_is_refused() {
    let server = Server::new("stranger");
    let other = Server::new("stranger-ca");
    let (port, _task) = server.once("200 OK", "{}").await;
    let err = other
        .client(port)
        .patch("/x", "application/json", "{}".into())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Exchange(ExchangeError::Tls { .. })),
        "{err}"
    );
}

#[tokio::test]
async fn silence_is_a_timeout_and_nobody_listening_a_connect_error() {
    let server = Server::new("silent");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let client = ApiClient {
        timeout: Duration::from_millis(300),
        ..server.client(port)
    };
    let err = client
        .patch("/x", "application/json", "{}".into())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("the API server: no answer from 127.0.0.1:{port} within 300ms")
    );
    drop(listener);
    let err = client
        .patch("/x", "application/json", "{}".into())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RequestError::Exchange(ExchangeError::Connect { .. })),
        "{err}"
    );
    std::fs::write(server.dir.join("token"), " \n").unwrap();
    let err = client
        .patch("/x", "application/json", "{}".into())
        .await
        .unwrap_err();
    assert!(err.to_string().ends_with("token: empty"), "{err}");
}

#[test]
fn answers_map_to_results() {
    let plain = answered(StatusCode::INTERNAL_SERVER_ERROR, b"  upstream broke\n");
    let long = answered(StatusCode::UNPROCESSABLE_ENTITY, "é".repeat(300).as_bytes());
    let shown = [
        answered(StatusCode::OK, b"{}").map_or_else(|e| e.to_string(), |()| "ok".into()),
        answered(StatusCode::NO_CONTENT, b"").map_or_else(|e| e.to_string(), |()| "ok".into()),
        plain.unwrap_err().to_string(),
    ];
    assert_eq!(
        shown,
        ["ok", "ok", "the API server answered 500: upstream broke"]
    );
    let RequestError::Status { code, message } = long.unwrap_err() else {
        panic!("not a status error");
    };
    assert_eq!((code, message.len()), (422, MAX_ERROR_TEXT));
}

#[test]
fn bad_settings_are_refused_at_start() {
    let server = Server::new("settings");
    let token = server.dir.join("token");
    let ca = server.dir.join("ca.crt");
    let t = Duration::from_secs(1);
    let err = |host: &str, port: &str, token: &Path, ca: &Path| {
        ApiClient::new(host, port, token, ca, t)
            .unwrap_err()
            .to_string()
    };
    let missing = server.dir.join("missing");
    std::fs::write(server.dir.join("empty.crt"), "").unwrap();
    let dir = server.dir.display().to_string();
    let shown = [
        err("10.96.0.1", "https", &token, &ca),
        err("10.96.0.1", "0", &token, &ca),
        err("not a host", "443", &token, &ca),
        err("10.96.0.1", "443", &token, &server.dir.join("empty.crt")),
        err("10.96.0.1", "443", &token, &missing),
        err("10.96.0.1", "443", &missing, &ca),
    ]
    .map(|e| e.replace(&dir, "DIR"));
    insta::assert_debug_snapshot!(shown, @r#"
    [
        "KUBERNETES_SERVICE_PORT=\"https\" is not a port number",
        "KUBERNETES_SERVICE_PORT=\"0\" is not a port number",
        "KUBERNETES_SERVICE_HOST=\"not a host\" is not a host name or an IP address",
        "the API server's CA DIR/empty.crt: no certificate in the file",
        "the API server's CA DIR/missing: I/O error: No such file or directory (os error 2)",
        "the service account token DIR/missing: No such file or directory (os error 2)",
    ]
    "#);
    let v6 = ApiClient::new("fd00::1", "443", &token, &ca, t).unwrap();
    assert_eq!(v6.endpoint.authority(), "[fd00::1]:443");
}

#[test]
fn a_token_that_is_no_header_value_is_an_error_without_the_token() {
    let err =
        patch_request("h:1", "/x", "bad\ntoken", "application/json", String::new()).unwrap_err();
    assert!(!err.to_string().contains("bad"), "{err}");
}
