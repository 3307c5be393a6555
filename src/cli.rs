//! Command line: the server (started by [`serve`]), the pod programs, and the offline tools
//! that run the same `sync` function.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use clap::{Parser, Subcommand, ValueEnum};
use k8s_openapi::jiff::Timestamp;
use memcached_hook::SyncError;
use memcached_hook::hook::{Child, Received, SyncResponse};

mod bitnami;
mod fields;
mod input;
mod probe;
mod render;
mod serve;

use serve::ServeArgs;

/// Metacontroller sync hook for Memcached.
#[derive(Debug, Parser)]
#[command(version = env!("MEMCACHED_HOOK_BUILD_ID"), about)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Image of the reload-agent sidecar in memcached pods (`secretRotation: Reload`) and in the
    /// pods of `spec.proxy`: the hook's own image, which runs `memcached-hook reload-agent`.
    #[arg(
        long,
        global = true,
        env = "MEMCACHED_HOOK_RELOAD_AGENT_IMAGE",
        default_value = memcached_hook::children::own_image::DEFAULT_IMAGE
    )]
    reload_agent_image: String,
    /// memcached image of a Memcached without `spec.image`: set it once to a mirror's copy
    /// (e.g. `registry.example.com/library/memcached:1.6.45`).
    #[arg(
        long,
        global = true,
        env = "MEMCACHED_HOOK_DEFAULT_IMAGE",
        default_value = memcached_hook::api::DEFAULT_IMAGE,
        value_parser = image_reference
    )]
    default_image: String,
    /// Exporter image of a Memcached without `spec.monitoring.exporterImage`: set it once to a
    /// mirror's copy.
    #[arg(
        long,
        global = true,
        env = "MEMCACHED_HOOK_DEFAULT_EXPORTER_IMAGE",
        default_value = memcached_hook::api::monitoring::DEFAULT_EXPORTER_IMAGE,
        value_parser = image_reference
    )]
    default_exporter_image: String,
    /// Ask Metacontroller (through /customize) for the pods of each Memcached with
    /// `warmRestart` or Secrets reloaded in place, so that WarmRestart says which pods restored
    /// their cache and SecretReload which failed to apply a rotated Secret (the reload agent
    /// then gets a ServiceAccount and RoleBinding to write its outcome on its own Pod).
    /// Metacontroller then caches every pod of the cluster (docs/operations.md: its memory).
    #[arg(long, global = true, env = "MEMCACHED_HOOK_RELATE_PODS")]
    relate_pods: bool,
    /// Give every running cache this hook's rendering of its pod template at once (a rollout
    /// of every cache the new rendering changes). Off: a cache keeps the pod template it runs
    /// until its Memcached's spec changes or a rollout is requested (docs/install.md).
    #[arg(long, global = true, env = "MEMCACHED_HOOK_ADOPT_NEW_RENDERING")]
    adopt_new_rendering: bool,
}

/// A default image as the API server would accept it in a pod: not empty, no surrounding
/// whitespace, no control character, within the length the CRD allows.
fn image_reference(value: &str) -> Result<String, String> {
    let max = memcached_hook::api::bounds::IMAGE_LENGTH;
    if value.is_empty() {
        Err("an image reference must not be empty".to_owned())
    } else if let Some(error) = memcached_hook::api::apiserver::image_error(value) {
        Err(format!("{value:?}: an image reference {error}"))
    } else if value.chars().count() > max {
        Err(format!(
            "an image reference must have at most {max} characters"
        ))
    } else {
        Ok(value.to_owned())
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve POST /sync, POST /customize, GET /healthz, GET /readyz and GET /metrics (the
    /// default).
    Serve(ServeArgs),
    /// Run a saved sync request through the hook and print the response.
    Replay {
        /// A sync request as Metacontroller sends it (JSON).
        request: PathBuf,
        /// json: the whole response; yaml: the desired children as multi-document YAML.
        #[arg(long, value_enum, default_value_t = Output::Json)]
        output: Output,
        /// The time to stamp on new condition transitions (RFC 3339); defaults to now.
        #[arg(long)]
        now: Option<Timestamp>,
    },
    /// Print the children the hook would create for Memcached CR file(s), as multi-document YAML.
    Render {
        /// A YAML file with one or more Memcached objects (`-`: standard input); objects of other
        /// kinds in it are passed over, the items of a `kind: List` rendered.
        file: PathBuf,
    },
    /// Print the CustomResourceDefinition generated from the types.
    Crd,
    /// Print a Memcached (and its SASL Secret) for a values file of the retired Bitnami memcached
    /// chart; the values it cannot carry over are listed as comments on top, with the reason.
    FromBitnami(bitnami::Args),
    /// Init step of a memcached pod with SASL: write the auth file memcached's `-Y` reads, a
    /// normalised copy of the Secret's (every line ends with a newline).
    AuthFile(memcached_hook::pod::auth_file::CopyArgs),
    /// Sidecar in a memcached pod: reload rotated TLS and auth files into the running memcached.
    ReloadAgent(memcached_hook::pod::reload_agent::Args),
    /// Sidecar in a memcached pod with SASL: serve memcached's stats under the Prometheus
    /// memcached exporter's series names, logged in with the mounted auth file.
    StatsExporter(memcached_hook::pod::exporter::ExporterArgs),
    /// GET a URL and require a 200 answer, e.g. a hook's /readyz (the image has no curl).
    Probe(probe::ProbeArgs),
    /// Init container with warmRestart: keep memcached's saved metadata only when it can be
    /// restored safely (a bad file means a cold start, never a failure).
    WarmGuard(memcached_hook::pod::warm::guard::GuardArgs),
    /// memcached's preStop hook with warmRestart: SIGUSR1, then wait for memcached to exit.
    WarmStop(memcached_hook::pod::warm::stop::StopArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Output {
    Json,
    Yaml,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum LogFormat {
    /// JSON when stderr is not a terminal, text otherwise.
    Auto,
    Json,
    Text,
}

/// Runs the chosen command.
///
/// # Errors
/// Whatever stops it, naming the file and field at fault.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let options = memcached_hook::Options {
        reload_agent_image: cli.reload_agent_image.into(),
        default_image: cli.default_image.into(),
        default_exporter_image: cli.default_exporter_image.into(),
        relate_pods: cli.relate_pods,
        adopt_new_rendering: cli.adopt_new_rendering,
    };
    match cli.command.unwrap_or(Command::Serve(ServeArgs::default())) {
        Command::Serve(args) => serve::serve(&args, options),
        Command::Replay {
            request,
            output,
            now,
        } => replay(
            &request,
            output,
            now.unwrap_or_else(Timestamp::now),
            &options,
        ),
        Command::Render { file } => print(&render::render(&file, &options)?),
        Command::Crd => print(&memcached_hook::api::crd_yaml().context("encoding the CRD")?),
        Command::FromBitnami(args) => print(&bitnami::from_bitnami(&args)?),
        Command::Probe(args) => print(&probe::probe(&args)?),
        Command::AuthFile(args) => {
            init_logging(LogFormat::Auto);
            Ok(memcached_hook::pod::auth_file::run(&args)?)
        }
        Command::ReloadAgent(args) => {
            init_logging(LogFormat::Auto);
            memcached_hook::pod::reload_agent::run(&args)
        }
        Command::StatsExporter(args) => {
            init_logging(LogFormat::Auto);
            memcached_hook::pod::exporter::run(&args)
        }
        Command::WarmGuard(args) => {
            init_logging(LogFormat::Auto);
            let _line = memcached_hook::pod::warm::guard::run(&args);
            Ok(())
        }
        Command::WarmStop(args) => {
            init_logging(LogFormat::Auto);
            let result = memcached_hook::pod::warm::stop::run(&args);
            match &result {
                Ok(line) => tracing::info!(result = %line, "warm restart stop"),
                Err(e) => tracing::error!(error = %e, "warm restart stop"),
            }
            result.map(drop).map_err(Into::into)
        }
    }
}

fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to stdout")
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let json = match format {
        LogFormat::Auto => !std::io::stderr().is_terminal(),
        LogFormat::Json => true,
        LogFormat::Text => false,
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}

/// Decodes a sync request as the server does. An error names the file and, for a parent the
/// CRD's schema refuses, each field at fault in Kubernetes' terms; otherwise the JSON path and
/// position of the problem in the file.
fn decode_request<'a>(path: &Path, bytes: &'a [u8]) -> anyhow::Result<Received<'a>> {
    Received::decode(bytes).map_err(|e| match fields::parent_problems(bytes) {
        Some(problems) => anyhow!("{}: {problems}", path.display()),
        None => anyhow!("{}: {}: {}", path.display(), e.path(), e.inner()),
    })
}

/// Runs `sync` on a request read from `path`. A parent of the wrong kind is named in
/// Kubernetes' terms, as the API server would, when the request has a body to check.
fn run_sync(
    path: &Path,
    received: &Received<'_>,
    now: Timestamp,
    options: &memcached_hook::Options,
) -> anyhow::Result<SyncResponse> {
    memcached_hook::sync(received, now, options).map_err(|e| {
        let schema = matches!(e, SyncError::WrongParent { .. })
            .then(|| received.body().and_then(fields::parent_problems))
            .flatten();
        match schema {
            Some(problems) => anyhow!("{}: {problems}", path.display()),
            None => anyhow!("{}: {}: {e}", path.display(), e.field()),
        }
    })
}

fn children_yaml(children: &[Child]) -> anyhow::Result<String> {
    let mut out = String::new();
    for child in children {
        out.push_str("---\n");
        let yaml = match child {
            // A kept child is raw JSON text; YAML needs its structure.
            Child::Kept(raw) => {
                let value: serde_json::Value =
                    serde_json::from_str(raw.get()).context("reading a kept child")?;
                serde_saphyr::to_string(&value)
            }
            _ => serde_saphyr::to_string(child),
        };
        out.push_str(&yaml.context("encoding a child as YAML")?);
    }
    Ok(out)
}

fn replay(
    path: &Path,
    output: Output,
    now: Timestamp,
    options: &memcached_hook::Options,
) -> anyhow::Result<()> {
    let body = input::read_bounded(path, input::INPUT_LIMIT)?;
    if !matches!(body.trim_ascii_start().first(), Some(b'{') | None) {
        bail!(
            "{}: not a sync request: replay reads the JSON body Metacontroller POSTs to /sync; for \
             the children of the Memcached objects in a YAML file, run `memcached-hook render {}`",
            path.display(),
            path.display()
        );
    }
    let received = decode_request(path, &body)?;
    let response = run_sync(path, &received, now, options)?;
    match output {
        Output::Json => print(&(serde_json::to_string_pretty(&response)? + "\n")),
        Output::Yaml => print(&children_yaml(&response.children)?),
    }
}
