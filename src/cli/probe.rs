//! `memcached-hook probe URL`: one HTTP GET that must be answered `200`. The image has no shell and
//! no HTTP client, so this is how a pod running the hook's own image checks a hook: the chart's
//! `helm test` calls `/readyz` through the Service with it.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use axum::http::Uri;
use rustls::pki_types::ServerName;

/// The most of an answer read to find its status line.
const STATUS_LINE_LIMIT: usize = 8 * 1024;
/// The pause between two attempts.
const RETRY_DELAY: Duration = Duration::from_secs(2);

/// Where to probe, and how patiently.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// An http:// or https:// URL, e.g. http://memcached-hook.memcached-system.svc:8080/readyz.
    url: Uri,
    /// PEM CA bundle that signed the server's certificate (needed for https).
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// Attempts before giving up, 2 s apart.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    attempts: u32,
    /// Time allowed for each step of an attempt (connect, send, read), in seconds.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
    timeout_seconds: u64,
}

/// The parts of the URL a request needs.
struct Target {
    /// The host without IPv6 brackets, to connect to and to check the certificate for.
    host: String,
    port: u16,
    /// `host:port` as the URL writes it, for the Host header.
    authority: String,
    path: String,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Target {
    fn new(args: &ProbeArgs) -> anyhow::Result<Self> {
        let url = &args.url;
        let https = match url.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => bail!("{url}: the URL must start with http:// or https://"),
        };
        let host = url.host().ok_or_else(|| anyhow!("{url}: no host"))?;
        let tls = match (https, &args.ca_file) {
            (true, Some(ca)) => Some(client_config(ca)?),
            (true, None) => {
                bail!("{url}: https needs --ca-file (the image has no CA certificates)")
            }
            (false, Some(_)) => bail!("{url}: --ca-file is for https URLs"),
            (false, None) => None,
        };
        let port = url.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(Self {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            authority: format!("{host}:{port}"),
            path: url
                .path_and_query()
                .map_or_else(|| "/".to_owned(), ToString::to_string),
            tls,
        })
    }
}

/// A client that trusts only the certificates in `ca`.
fn client_config(ca: &Path) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    memcached_hook::pod::agent::apiclient::trusting(ca)
        .map_err(|e| anyhow!("{}: {e}", ca.display()))
}

/// GETs the URL until it answers `200`, at most `--attempts` times.
///
/// # Errors
/// A bad URL or CA file, or no `200` in any attempt (with the last answer or error).
pub fn probe(args: &ProbeArgs) -> anyhow::Result<String> {
    let target = Target::new(args)?;
    let timeout = Duration::from_secs(args.timeout_seconds);
    let mut last = anyhow!("no attempt");
    for attempt in 1..=args.attempts {
        match get(&target, timeout) {
            Ok(status) if status.split(' ').nth(1) == Some("200") => {
                return Ok(format!("GET {}: {status}\n", args.url));
            }
            Ok(status) => last = anyhow!("answered {status}"),
            Err(e) => last = e,
        }
        if attempt < args.attempts {
            std::thread::sleep(RETRY_DELAY);
        }
    }
    Err(last.context(format!(
        "GET {}: no 200 in {} attempt(s)",
        args.url, args.attempts
    )))
}

/// One GET; the answer's status line.
fn get(target: &Target, timeout: Duration) -> anyhow::Result<String> {
    let place = format!("{}:{}", target.host, target.port);
    let addr = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .with_context(|| format!("resolving {place}"))?
        .next()
        .ok_or_else(|| anyhow!("{place}: no address"))?;
    let tcp = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("connecting to {place} ({addr})"))?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    match &target.tls {
        None => exchange(tcp, target),
        Some(config) => {
            let name = ServerName::try_from(target.host.clone())
                .with_context(|| format!("{}: not a DNS name or an IP address", target.host))?;
            let client =
                rustls::ClientConnection::new(Arc::clone(config), name).context("starting TLS")?;
            let mut stream = rustls::StreamOwned::new(client, tcp);
            while stream.conn.is_handshaking() {
                stream
                    .conn
                    .complete_io(&mut stream.sock)
                    .with_context(|| format!("TLS handshake with {place}"))?;
            }
            exchange(stream, target)
        }
    }
}

/// Sends the request and reads up to the end of the status line.
fn exchange(mut stream: impl Read + Write, target: &Target) -> anyhow::Result<String> {
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: memcached-hook-probe\r\nConnection: close\r\n\r\n",
        target.path, target.authority
    );
    stream.write_all(request.as_bytes()).context("sending")?;
    let mut answer = Vec::new();
    let mut chunk = [0_u8; 1024];
    while !answer.contains(&b'\n') && answer.len() < STATUS_LINE_LIMIT {
        let n = stream.read(&mut chunk).context("reading the answer")?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&answer);
    let line = text.lines().next().unwrap_or_default().trim();
    if !line.starts_with("HTTP/") {
        bail!("not an HTTP answer: {line:?}");
    }
    Ok(line.to_owned())
}
