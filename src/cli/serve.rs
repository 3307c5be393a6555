//! `memcached-hook serve`: the server's start-up, from its flags to a listening server that
//! stops on SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use memcached_hook::server::auth::{AuthFiles, Authenticator};
use memcached_hook::server::tls::{Tls, TlsFiles};
use memcached_hook::server::{self, Config};

use super::LogFormat;

#[derive(Debug, clap::Args)]
pub(super) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "MEMCACHED_HOOK_ADDR", default_value = "0.0.0.0:8080")]
    addr: SocketAddr,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "MEMCACHED_HOOK_BODY_LIMIT", default_value_t = server::DEFAULT_BODY_LIMIT)]
    body_limit: usize,
    /// Time allowed for one request, in milliseconds (keep it below Metacontroller's 10 s).
    #[arg(
        long,
        env = "MEMCACHED_HOOK_REQUEST_TIMEOUT_MS",
        default_value_t = 5000
    )]
    request_timeout_ms: u64,
    /// Most connections served at once (at least 1); beyond it, a reserve of 8 connections
    /// answers only the probes and /metrics, and anything else there gets 503.
    #[arg(
        long,
        env = "MEMCACHED_HOOK_MAX_CONNECTIONS",
        default_value_t = server::DEFAULT_MAX_CONNECTIONS as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    max_connections: u64,
    /// Log format.
    #[arg(long, env = "MEMCACHED_HOOK_LOG_FORMAT", value_enum, default_value_t = LogFormat::Auto)]
    log_format: LogFormat,
    /// File with the token callers must send after the scheme (`Authorization: Bearer <token>`).
    #[arg(long, env = "MEMCACHED_HOOK_AUTH_TOKEN_FILE")]
    auth_token_file: Option<PathBuf>,
    /// File with the basic-auth user name (needs --auth-basic-password-file).
    #[arg(long, env = "MEMCACHED_HOOK_AUTH_BASIC_USERNAME_FILE")]
    auth_basic_username_file: Option<PathBuf>,
    /// File with the basic-auth password (needs --auth-basic-username-file).
    #[arg(long, env = "MEMCACHED_HOOK_AUTH_BASIC_PASSWORD_FILE")]
    auth_basic_password_file: Option<PathBuf>,
    /// PEM certificate chain: serve HTTPS (needs --tls-key-file).
    #[arg(long, env = "MEMCACHED_HOOK_TLS_CERT_FILE", requires = "tls_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// PEM private key of --tls-cert-file.
    #[arg(long, env = "MEMCACHED_HOOK_TLS_KEY_FILE", requires = "tls_cert_file")]
    tls_key_file: Option<PathBuf>,
    /// PEM CA bundle: require client certificates it signed (mutual TLS).
    #[arg(
        long,
        env = "MEMCACHED_HOOK_TLS_CLIENT_CA_FILE",
        requires = "tls_cert_file"
    )]
    tls_client_ca_file: Option<PathBuf>,
    /// How often credential and certificate files are checked for changes, in seconds.
    #[arg(
        long,
        env = "MEMCACHED_HOOK_RELOAD_INTERVAL_SECONDS",
        default_value_t = 5
    )]
    reload_interval_seconds: u64,
}

impl Default for ServeArgs {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([0, 0, 0, 0], 8080)),
            body_limit: server::DEFAULT_BODY_LIMIT,
            request_timeout_ms: 5000,
            max_connections: server::DEFAULT_MAX_CONNECTIONS as u64,
            log_format: LogFormat::Auto,
            auth_token_file: None,
            auth_basic_username_file: None,
            auth_basic_password_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            tls_client_ca_file: None,
            reload_interval_seconds: 5,
        }
    }
}

/// The TLS certificate of `--tls-cert-file`/`--tls-key-file`, when both are given.
fn load_tls(args: &ServeArgs) -> anyhow::Result<Option<Arc<Tls>>> {
    let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_key_file) else {
        return Ok(None);
    };
    let files = TlsFiles {
        cert: cert.clone(),
        key: key.clone(),
        client_ca: args.tls_client_ca_file.clone(),
    };
    let tls = Tls::new(files).context("loading the TLS certificate")?;
    Ok(Some(Arc::new(tls)))
}

/// The credentials of the `--auth-*` files, when any is given.
fn load_auth(args: &ServeArgs) -> anyhow::Result<Option<Arc<Authenticator>>> {
    let files = AuthFiles {
        token: args.auth_token_file.clone(),
        basic_username: args.auth_basic_username_file.clone(),
        basic_password: args.auth_basic_password_file.clone(),
    };
    let auth = files.any().then(|| Authenticator::new(files)).transpose();
    Ok(auth.context("loading credentials")?.map(Arc::new))
}

pub(super) fn serve(args: &ServeArgs, options: memcached_hook::Options) -> anyhow::Result<()> {
    super::init_logging(args.log_format);
    if memcached_hook::children::own_image::is_placeholder(&options.reload_agent_image) {
        tracing::warn!(
            image = %options.reload_agent_image,
            "the reload-agent image is the placeholder: set --reload-agent-image \
             (MEMCACHED_HOOK_RELOAD_AGENT_IMAGE) to the hook's own image, or pods that reload \
             Secrets in place and the pods of spec.proxy cannot pull it"
        );
    }
    let auth = load_auth(args)?;
    let tls = load_tls(args)?;
    let config = Config {
        body_limit: args.body_limit,
        request_timeout: Duration::from_millis(args.request_timeout_ms),
        auth: auth.clone(),
        // Saturates where usize is narrower; `serve` clamps to what a semaphore can hold.
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        metrics: Arc::default(),
        options: Arc::new(options),
    };
    let reload = Duration::from_secs(args.reload_interval_seconds.max(1));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        if let Some(auth) = &auth {
            auth.spawn_reloader(reload);
        }
        if let Some(tls) = &tls {
            tls.spawn_reloader(reload);
        }
        tracing::info!(
            addr = %args.addr,
            build = env!("MEMCACHED_HOOK_BUILD_ID"),
            tls = tls.is_some(),
            client_certificates = args.tls_client_ca_file.is_some(),
            authentication = auth.is_some(),
            max_connections = args.max_connections,
            "memcached-hook serving"
        );
        server::serve(
            listener,
            tls,
            memcached_hook::process::shutdown_signal(),
            &config,
        )
        .await
        .context("serving")?;
        tracing::info!("memcached-hook stopped");
        Ok(())
    })
}
