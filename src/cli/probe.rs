//! `memcached-hook probe URL`: one HTTP GET that must be answered `200`. The image has no shell and
//! no HTTP client, so this is how a pod running the hook's own image checks a hook: the chart's
//! `helm test` calls `/readyz` through the Service with it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use axum::http::{StatusCode, Uri, header};
use memcached_hook::http_client::{Endpoint, trusting};

/// The most of an answer's body read.
const MAX_BODY: usize = 64 * 1024;
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
    /// Time allowed for each attempt (connect, send, read the answer), in seconds.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
    timeout_seconds: u64,
}

/// Where the GET goes and what it asks for.
struct Target {
    endpoint: Endpoint,
    path: String,
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
            (true, Some(ca)) => Some(trusting(ca).map_err(|e| anyhow!("{}: {e}", ca.display()))?),
            (true, None) => {
                bail!("{url}: https needs --ca-file (the image has no CA certificates)")
            }
            (false, Some(_)) => bail!("{url}: --ca-file is for https URLs"),
            (false, None) => None,
        };
        let port = url.port_u16().unwrap_or(if https { 443 } else { 80 });
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Ok(Self {
            endpoint: Endpoint::new(host, port, tls).map_err(|e| anyhow!("{url}: {e}"))?,
            path: url
                .path_and_query()
                .map_or_else(|| "/".to_owned(), ToString::to_string),
        })
    }

    /// One GET; the answer's status.
    async fn get(&self, timeout: Duration) -> anyhow::Result<StatusCode> {
        let request = axum::http::Request::get(&self.path)
            .header(header::HOST, self.endpoint.authority())
            .header(header::USER_AGENT, "memcached-hook-probe")
            .header(header::CONNECTION, "close")
            .body(String::new())
            .context("building the request")?;
        let (status, _) = self.endpoint.send(request, MAX_BODY, timeout).await?;
        Ok(status)
    }
}

/// GETs the URL until it answers `200`, at most `--attempts` times.
///
/// # Errors
/// A bad URL or CA file, or no `200` in any attempt (with the last answer or error).
pub fn probe(args: &ProbeArgs) -> anyhow::Result<String> {
    let target = Target::new(args)?;
    let timeout = Duration::from_secs(args.timeout_seconds);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let mut last = anyhow!("no attempt");
        for attempt in 1..=args.attempts {
            match target.get(timeout).await {
                Ok(StatusCode::OK) => return Ok(format!("GET {}: HTTP/1.1 200 OK\n", args.url)),
                Ok(status) => last = anyhow!("answered HTTP/1.1 {status}"),
                Err(e) => last = e,
            }
            if attempt < args.attempts {
                tokio::time::sleep(RETRY_DELAY).await;
            }
        }
        Err(last.context(format!(
            "GET {}: no 200 in {} attempt(s)",
            args.url, args.attempts
        )))
    })
}
