//! The options of `memcached-hook reload-agent`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::builder::NonEmptyStringValueParser;

use super::{METRICS_PORT, apiclient};

/// `memcached-hook reload-agent` options.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// memcached's `ssl_chain_cert` file (needs --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// memcached's `ssl_key` file.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// memcached's `ssl_ca_cert` file, checked with the pair (memcached reloads it additively).
    #[arg(long, requires = "tls_cert")]
    pub tls_ca: Option<PathBuf>,
    /// The Secret's auth file; its first entry is also the agent's own login.
    #[arg(long)]
    pub auth_file: Option<PathBuf>,
    /// Where memcached's `-Y` points: a new auth file is written there, normalised, before the
    /// SIGHUP. Without it memcached is taken to read --auth-file itself.
    #[arg(long, requires = "auth_file")]
    pub auth_copy: Option<PathBuf>,
    /// Proxy mode: memcached's proxy's route configuration (a mounted ConfigMap file). On a
    /// change the agent sends SIGHUP to the proxy listening on --admin-addr and confirms the
    /// load from its `stats`.
    #[arg(long, conflicts_with_all = ["tls_cert", "auth_file", "pod_condition"])]
    pub proxy_routes: Option<PathBuf>,
    /// memcached's plaintext listener on the pod's loopback.
    #[arg(long, default_value = "127.0.0.1:11211")]
    pub admin_addr: SocketAddr,
    /// Where `GET /metrics` and `GET /healthz` are served.
    #[arg(long, default_value_t = SocketAddr::from(([0, 0, 0, 0], METRICS_PORT)))]
    pub metrics_addr: SocketAddr,
    /// Seconds between two looks at the files.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub interval_seconds: u64,
    /// Time allowed for each connection to memcached, in milliseconds.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub timeout_ms: u64,
    /// memcached's process name (`/proc/<pid>/comm`) for SIGHUP.
    #[arg(long, default_value = "memcached")]
    pub process_name: String,
    /// Report each reload's outcome as the condition `memcached.c5c3.io/SecretReload` on the
    /// agent's own Pod (a PATCH of `pods/status`; needs --pod-name and --pod-namespace).
    #[arg(long, requires_all = ["pod_name", "pod_namespace"])]
    pub pod_condition: bool,
    /// The agent's Pod (with --pod-condition), from the downward API.
    #[arg(long, env = "POD_NAME", value_parser = NonEmptyStringValueParser::new())]
    pub pod_name: Option<String>,
    /// The agent Pod's namespace (with --pod-condition), from the downward API.
    #[arg(long, env = "POD_NAMESPACE", value_parser = NonEmptyStringValueParser::new())]
    pub pod_namespace: Option<String>,
    /// The service account token for the API server, read again for every request.
    #[arg(long, default_value = apiclient::TOKEN_FILE)]
    pub api_token_file: PathBuf,
    /// The CA that signed the API server's certificate.
    #[arg(long, default_value = apiclient::CA_FILE)]
    pub api_ca_file: PathBuf,
}
