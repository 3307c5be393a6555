//! Authentication (bearer, basic), TLS and mutual TLS, reloading, slow clients, the connection
//! limit and graceful shutdown, against the real server on loopback.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use base64::Engine as _;
use memcached_hook::server::auth::{AuthFiles, Authenticator};
use memcached_hook::server::tls::{Tls, TlsFiles};
use memcached_hook::server::{Config, serve};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::http::{call, fixture};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memcached-hook-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

// ---- authentication through the router ----

async fn status_with(
    config: &Config,
    path: &str,
    authorization: Option<&str>,
) -> (StatusCode, String) {
    let mut request = Request::builder().uri(path);
    if path == "/sync" {
        request = request
            .method("POST")
            .header(header::CONTENT_TYPE, "application/json");
    }
    if let Some(value) = authorization {
        request = request.header(header::AUTHORIZATION, value);
    }
    let body = if path == "/sync" {
        Body::from(fixture("steady-state"))
    } else {
        Body::empty()
    };
    let (status, _, bytes) = call(config, request.body(body).expect("request")).await;
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn bearer_and_basic_auth_with_reload() {
    let dir = temp_dir("auth");
    let (token, user, password) = (
        dir.join("token"),
        dir.join("username"),
        dir.join("password"),
    );
    std::fs::write(&token, "s3cret-token\n").expect("write");
    std::fs::write(&user, "metacontroller").expect("write");
    std::fs::write(&password, "pa55").expect("write");
    let auth = Arc::new(
        Authenticator::new(AuthFiles {
            token: Some(token.clone()),
            basic_username: Some(user),
            basic_password: Some(password),
        })
        .expect("credentials"),
    );
    let config = Config {
        auth: Some(Arc::clone(&auth)),
        ..Config::default()
    };
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("metacontroller:pa55")
    );
    let wrong_basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("metacontroller:nope")
    );
    for (value, want) in [
        (None, StatusCode::UNAUTHORIZED),
        (Some("Bearer wrong"), StatusCode::UNAUTHORIZED),
        (Some("Bearer s3cret-token"), StatusCode::OK),
        (Some("bearer s3cret-token"), StatusCode::OK),
        (Some(basic.as_str()), StatusCode::OK),
        (Some(wrong_basic.as_str()), StatusCode::UNAUTHORIZED),
        (Some("s3cret-token"), StatusCode::UNAUTHORIZED),
    ] {
        let (status, body) = status_with(&config, "/sync", value).await;
        assert_eq!(status, want, "{value:?}");
        if status == StatusCode::UNAUTHORIZED {
            assert_eq!(
                body, r#"{"error":"unauthorized"}"#,
                "no detail, nothing secret"
            );
        }
    }
    assert_eq!(
        status_with(&config, "/healthz", None).await.0,
        StatusCode::OK,
        "probes need no credentials"
    );

    // Rotation: the new token replaces the old one once the file changes.
    std::fs::write(&token, "rotated-token-value").expect("write");
    assert!(auth.reload_if_changed());
    assert_eq!(
        status_with(&config, "/sync", Some("Bearer s3cret-token"))
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status_with(&config, "/sync", Some("Bearer rotated-token-value"))
            .await
            .0,
        StatusCode::OK
    );
    // A broken file keeps the credentials in force.
    std::fs::write(&token, "").expect("write");
    assert!(!auth.reload_if_changed());
    assert_eq!(
        status_with(&config, "/sync", Some("Bearer rotated-token-value"))
            .await
            .0,
        StatusCode::OK
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn half_a_basic_pair_is_refused() {
    let dir = temp_dir("half");
    std::fs::write(dir.join("u"), "user").expect("write");
    let err = Authenticator::new(AuthFiles {
        basic_username: Some(dir.join("u")),
        ..AuthFiles::default()
    })
    .expect_err("refused");
    assert!(err.to_string().contains("both"));
    std::fs::remove_dir_all(&dir).ok();
}

// ---- TLS against the real server ----

pub(crate) struct Pki {
    pub(crate) ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    pub(crate) fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("CA");
        Self {
            ca_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// `(certificate PEM, key PEM)` for `names`, signed by this CA.
    pub(crate) fn leaf(&self, names: &[&str]) -> (String, String) {
        let params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .expect("params");
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf");
        (cert.pem(), key.serialize_pem())
    }
}

fn client_config(ca_pem: &str, client: Option<&(String, String)>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("pem")).expect("root");
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots);
    Arc::new(match client {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .expect("chain");
            builder
                .with_client_auth_cert(
                    chain,
                    PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key"),
                )
                .expect("client auth")
        }
        None => builder.with_no_client_auth(),
    })
}

/// GET /healthz over TLS; `Some(status line)` or `None` when the server refused us.
async fn tls_get(addr: std::net::SocketAddr, config: Arc<rustls::ClientConfig>) -> Option<String> {
    let tcp = TcpStream::connect(addr).await.ok()?;
    let connector = tokio_rustls::TlsConnector::from(config);
    let mut stream = connector
        .connect(ServerName::try_from("localhost").expect("name"), tcp)
        .await
        .ok()?;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response))
        .await
        .ok()?
        .ok()?;
    String::from_utf8_lossy(&response)
        .lines()
        .next()
        .map(str::to_owned)
        .filter(|l| l.starts_with("HTTP/"))
}

fn write_files(dir: &Path, cert: &(String, String), ca: Option<&str>) -> TlsFiles {
    std::fs::write(dir.join("tls.crt"), &cert.0).expect("write");
    std::fs::write(dir.join("tls.key"), &cert.1).expect("write");
    if let Some(ca) = ca {
        std::fs::write(dir.join("ca.crt"), ca).expect("write");
    }
    TlsFiles {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
        client_ca: ca.map(|_| dir.join("ca.crt")),
    }
}

type Server = (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
);

async fn start(tls: Option<Arc<Tls>>) -> Server {
    start_with(tls, Config::default()).await
}

/// The real server on `127.0.0.1:<free port>`, routes and connection settings from `config`.
async fn start_with(tls: Option<Arc<Tls>>, config: Config) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        serve(listener, tls, shutdown, &config)
            .await
            .expect("serve");
    });
    (addr, stop, handle)
}

/// Waits (at most 10 s) for the server task to end.
async fn stopped(handle: tokio::task::JoinHandle<()>) {
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("server stops")
        .expect("task");
}

/// Signals shutdown and waits for the server to end; returns how long that took.
async fn shut_down(
    stop: tokio::sync::oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<()>,
) -> Duration {
    let started = std::time::Instant::now();
    stop.send(()).expect("stop");
    stopped(handle).await;
    started.elapsed()
}

#[tokio::test]
async fn tls_mutual_tls_and_certificate_reload() {
    let dir = temp_dir("tls");
    let server_ca = Pki::new("server CA");
    let client_ca = Pki::new("client CA");
    let server_cert = server_ca.leaf(&["localhost", "127.0.0.1"]);
    let tls =
        Arc::new(Tls::new(write_files(&dir, &server_cert, Some(&client_ca.ca_pem))).expect("tls"));
    let (addr, stop, handle) = start(Some(Arc::clone(&tls))).await;

    let trusted_client = client_ca.leaf(&["metacontroller"]);
    let rogue_client = Pki::new("rogue").leaf(&["metacontroller"]);
    assert_eq!(
        tls_get(
            addr,
            client_config(&server_ca.ca_pem, Some(&trusted_client))
        )
        .await
        .as_deref(),
        Some("HTTP/1.1 200 OK")
    );
    assert_eq!(
        tls_get(addr, client_config(&server_ca.ca_pem, None)).await,
        None,
        "no client certificate"
    );
    assert_eq!(
        tls_get(addr, client_config(&server_ca.ca_pem, Some(&rogue_client))).await,
        None,
        "certificate of another CA"
    );

    // Plain HTTP to the TLS port gets no HTTP answer.
    let mut plain = TcpStream::connect(addr).await.expect("connect");
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(6), plain.read_to_end(&mut answer)).await;
    assert!(!String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"));

    // Rotation: a certificate from a new CA is served once the files change.
    let new_ca = Pki::new("rotated CA");
    write_files(&dir, &new_ca.leaf(&["localhost"]), Some(&client_ca.ca_pem));
    assert!(tls.reload_if_changed());
    assert_eq!(
        tls_get(addr, client_config(&new_ca.ca_pem, Some(&trusted_client)))
            .await
            .as_deref(),
        Some("HTTP/1.1 200 OK")
    );
    assert_eq!(
        tls_get(
            addr,
            client_config(&server_ca.ca_pem, Some(&trusted_client))
        )
        .await,
        None,
        "old CA no longer matches"
    );
    // Broken files keep the configuration in force.
    std::fs::write(dir.join("tls.key"), "not a key").expect("write");
    assert!(!tls.reload_if_changed());
    assert_eq!(
        tls_get(addr, client_config(&new_ca.ca_pem, Some(&trusted_client)))
            .await
            .as_deref(),
        Some("HTTP/1.1 200 OK")
    );

    shut_down(stop, handle).await;
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn slow_clients_are_cut_off_and_shutdown_finishes_in_flight_requests() {
    let (addr, stop, handle) = start(None).await;

    // A client that never finishes its headers is disconnected after the header timeout.
    let mut slow = TcpStream::connect(addr).await.expect("connect");
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(8), slow.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the server closed the connection in time");

    // So is a client that connects and sends nothing, and one that speaks HTTP/2 and then idles.
    let mut silent = TcpStream::connect(addr).await.expect("connect");
    let mut h2 = TcpStream::connect(addr).await.expect("connect");
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .expect("preface");
    for (name, stream) in [("silent", &mut silent), ("h2", &mut h2)] {
        let mut buf = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(8), stream.read_to_end(&mut buf)).await;
        assert!(
            read.is_ok(),
            "{name}: the server closed the connection in time"
        );
    }

    // A request in flight when shutdown starts is still answered.
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sync/steady-state.json"
    ))
    .expect("fixture");
    let mut client = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST /sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await.expect("head");
    client
        .write_all(&body[..body.len() / 2])
        .await
        .expect("half");
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.send(()).expect("stop");
    tokio::time::sleep(Duration::from_millis(200)).await;
    client
        .write_all(&body[body.len() / 2..])
        .await
        .expect("rest");
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), client.read_to_end(&mut response))
        .await
        .expect("answered")
        .expect("read");
    assert!(
        String::from_utf8_lossy(&response).starts_with("HTTP/1.1 200 OK"),
        "{}",
        String::from_utf8_lossy(&response[..response.len().min(200)])
    );
    stopped(handle).await;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn shutdown_does_not_wait_for_silent_connections() {
    let (addr, stop, handle) = start(None).await;
    let _silent = TcpStream::connect(addr).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let took = shut_down(stop, handle).await;
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

// ---- connection limit ----

/// Waits (at most 2 s) until the server counts `want` open connections.
async fn wait_for_open(config: &Config, want: u64) {
    for _ in 0..200 {
        if config.metrics.open_connections() == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "{} open connections, expected {want}",
        config.metrics.open_connections()
    );
}

/// Sends `GET path` with `Connection: close` on `stream` and reads the whole answer (at most
/// `within`); `None` if nothing came back in time.
async fn get(stream: &mut TcpStream, path: &str, within: Duration) -> Option<String> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    tokio::time::timeout(within, stream.read_to_end(&mut response))
        .await
        .ok()?
        .ok()?;
    Some(String::from_utf8_lossy(&response).into_owned())
}

/// Sends raw `request` on a new connection and reads the whole answer (at most 3 s).
async fn exchange(addr: std::net::SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut response))
        .await
        .expect("answered within 3 s")
        .expect("read");
    String::from_utf8_lossy(&response).into_owned()
}

#[tokio::test]
async fn at_the_connection_limit_probes_are_answered_and_hook_calls_get_503() {
    let config = Config {
        max_connections: 2,
        ..Config::default()
    };
    let (addr, stop, handle) = start_with(None, config.clone()).await;

    // Two connections take both slots: one silent, one with half its headers.
    let silent = TcpStream::connect(addr).await.expect("connect");
    let mut half = TcpStream::connect(addr).await.expect("connect");
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    wait_for_open(&config, 2).await;

    // Beyond the limit the probes and the metrics are answered at once...
    for path in ["/healthz", "/readyz", "/metrics"] {
        let mut probe = TcpStream::connect(addr).await.expect("connect");
        let text = get(&mut probe, path, Duration::from_secs(3))
            .await
            .expect("answered at the limit");
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{path}: {text}");
        if path == "/metrics" {
            // The gauge counts the connections holding a slot.
            assert!(
                text.lines()
                    .any(|l| l == "memcached_hook_open_connections 2"),
                "{text}"
            );
        }
    }
    // ...and a hook call is told to come back, not kept waiting.
    let text = exchange(
        addr,
        "POST /sync HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    )
    .await;
    assert!(
        text.starts_with("HTTP/1.1 503 Service Unavailable"),
        "{text}"
    );
    assert!(text.contains("connection limit reached"), "{text}");
    assert_eq!(config.metrics.open_connections(), 2);

    // Closing one held connection frees a slot for hook calls again.
    drop(silent);
    wait_for_open(&config, 1).await;
    let text = exchange(
        addr,
        "POST /sync HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
    )
    .await;
    assert!(text.starts_with("HTTP/1.1 422"), "{text}");

    drop(half);
    wait_for_open(&config, 0).await;
    shut_down(stop, handle).await;
}

#[tokio::test]
async fn a_full_probe_reserve_gives_way_to_a_new_probe() {
    let config = Config {
        max_connections: 1,
        ..Config::default()
    };
    let (addr, stop, handle) = start_with(None, config.clone()).await;
    let _held = TcpStream::connect(addr).await.expect("connect");
    wait_for_open(&config, 1).await;
    // Silent connections fill the reserve (each is accepted in turn).
    let mut silent = Vec::new();
    for _ in 0..memcached_hook::server::PROBE_RESERVE * 2 {
        silent.push(TcpStream::connect(addr).await.expect("connect"));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut probe = TcpStream::connect(addr).await.expect("connect");
    let text = get(&mut probe, "/healthz", Duration::from_secs(3))
        .await
        .expect("answered with the reserve full");
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    // The oldest silent connections were closed to make room.
    let mut byte = [0u8; 1];
    let first = tokio::time::timeout(Duration::from_secs(1), silent[0].read(&mut byte)).await;
    assert!(matches!(first, Ok(Ok(0)) | Ok(Err(_))), "{first:?}");
    shut_down(stop, handle).await;
}

#[tokio::test]
async fn an_announced_body_over_the_limit_is_refused_before_100_continue() {
    let config = Config {
        body_limit: 1024,
        ..Config::default()
    };
    let (addr, stop, handle) = start_with(None, config).await;
    let text = exchange(
        addr,
        "POST /sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: 1025\r\nExpect: 100-continue\r\n\r\n",
    )
    .await;
    assert!(
        text.starts_with("HTTP/1.1 413 Payload Too Large"),
        "no 100 Continue, an immediate 413: {text}"
    );
    assert!(!text.contains("100 Continue"), "{text}");
    assert!(text.contains("over the limit of 1024 bytes"), "{text}");
    shut_down(stop, handle).await;
}

#[tokio::test]
async fn shutdown_is_prompt_while_waiting_at_the_connection_limit() {
    let config = Config {
        max_connections: 1,
        ..Config::default()
    };
    let (addr, stop, handle) = start_with(None, config.clone()).await;
    let _silent = TcpStream::connect(addr).await.expect("connect");
    wait_for_open(&config, 1).await;
    // A client beyond the limit waits in the probe reserve; it changes nothing.
    let _waiting = TcpStream::connect(addr).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let took = shut_down(stop, handle).await;
    assert!(took < Duration::from_secs(2), "took {took:?}");
}
