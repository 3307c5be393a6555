//! `spec.memcached`: the memcached server settings, each one command-line flag.
//!
//! `0` and `""` mean "use the default" here (as in the reference operator), so a value of zero
//! is never out of range.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::check::{self, Out, Violation, Zero, is_too_long, quoted};
use super::command_line::{self, CommandLine};
use super::hardening::{Hardening, HardeningSpec};

/// Default item memory in MB.
pub const DEFAULT_MAX_MEMORY_MB: i32 = 64;
/// Bounds of `maxMemoryMB`.
pub const MAX_MEMORY_MB: (i32, i32) = (16, 65536);
/// Default connection limit.
pub const DEFAULT_MAX_CONNECTIONS: i32 = 1024;
/// Bounds of `maxConnections`.
pub const MAX_CONNECTIONS: (i32, i32) = (1, 65536);
/// Default worker threads.
pub const DEFAULT_THREADS: i32 = 4;
/// Bounds of `threads`.
pub const THREADS: (i32, i32) = (1, 128);
/// Default maximum item size.
pub const DEFAULT_MAX_ITEM_SIZE: &str = "1m";
/// The pattern of `maxItemSize`.
pub const ITEM_SIZE_PATTERN: &str = r"^[0-9]+(k|m)$";
/// Length of `maxItemSize` (the longest useful value, `1048576k`, has 8).
pub const ITEM_SIZE_LENGTH: usize = 16;
/// Default verbosity.
pub const DEFAULT_VERBOSITY: i32 = 0;
/// Bounds of `verbosity`.
pub const VERBOSITY: (i32, i32) = (0, 2);
/// Entries of `extraArgs`.
pub const EXTRA_ARGS: usize = 64;
/// One entry of `extraArgs`.
pub const EXTRA_ARG_LENGTH: usize = 1024;
/// memcached's memory beyond its item memory that does not grow with it, in MiB: the process
/// and its first hash table (measured 4.7 MiB), the allocator's state, headroom.
pub const MEMORY_FIXED_MIB: i64 = 8;
/// Connections per MiB: a connection in the middle of a request holds a 16 KiB read buffer.
pub const CONNECTIONS_PER_MIB: i64 = 64;
/// MiB of item memory per MiB of overhead that grows with it: 4 KiB per 1 MiB slab page and
/// the hash table (8 bytes per bucket, doubling) of items of a few hundred bytes and more.
pub const ITEM_MIB_PER_OVERHEAD_MIB: i64 = 64;

/// The memory memcached uses with `-m max_memory_mb -c max_connections` when its item memory
/// is full and every connection is busy, in MiB (docs/behaviour.md, "Memory request", has the
/// measurements): `maxMemoryMB + 8 + ceil(maxConnections / 64) + ceil(maxMemoryMB / 64)`.
#[must_use]
pub fn memory_request_mib(max_memory_mb: i32, max_connections: i32) -> i64 {
    let mb = i64::from(max_memory_mb.max(0));
    let connections = i64::from(max_connections.max(0));
    mb + MEMORY_FIXED_MIB
        + (connections + CONNECTIONS_PER_MIB - 1) / CONNECTIONS_PER_MIB
        + (mb + ITEM_MIB_PER_OVERHEAD_MIB - 1) / ITEM_MIB_PER_OVERHEAD_MIB
}

/// memcached server settings; each maps to one command-line flag.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedConfig {
    /// Item memory in megabytes (`-m`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "maxMemoryMB"
    )]
    #[schemars(
        range(min = MAX_MEMORY_MB.0, max = MAX_MEMORY_MB.1),
        extend("default" = DEFAULT_MAX_MEMORY_MB)
    )]
    pub max_memory_mb: Option<i32>,

    /// Maximum simultaneous connections (`-c`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = MAX_CONNECTIONS.0, max = MAX_CONNECTIONS.1),
        extend("default" = DEFAULT_MAX_CONNECTIONS)
    )]
    pub max_connections: Option<i32>,

    /// Worker threads (`-t`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = THREADS.0, max = THREADS.1), extend("default" = DEFAULT_THREADS))]
    pub threads: Option<i32>,

    /// Maximum item size (`-I`), a number followed by `k` or `m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        regex(pattern = ITEM_SIZE_PATTERN),
        length(max = ITEM_SIZE_LENGTH),
        extend("default" = DEFAULT_MAX_ITEM_SIZE)
    )]
    pub max_item_size: Option<String>,

    /// Log verbosity: 0 none, 1 `-v`, 2 `-vv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = VERBOSITY.0, max = VERBOSITY.1), extend("default" = DEFAULT_VERBOSITY))]
    pub verbosity: Option<i32>,

    /// Extra memcached arguments, appended verbatim after all others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = EXTRA_ARGS), inner(length(max = EXTRA_ARG_LENGTH)))]
    pub extra_args: Option<Vec<String>>,

    /// Commands memcached refuses to every client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub hardening: Option<HardeningSpec>,
}

/// The memcached settings with every default applied, and `-m`, `-c` and `-I` as memcached
/// reads them: an `extraArgs` flag comes after the hook's own and wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Server<'a> {
    /// `-m`.
    pub max_memory_mb: i32,
    /// `-c`.
    pub max_connections: i32,
    /// `-t`.
    pub threads: i32,
    /// `-I`.
    pub max_item_size: &'a str,
    /// 0, 1 (`-v`) or 2 (`-vv`).
    pub verbosity: i32,
    /// Appended verbatim.
    pub extra_args: &'a [String],
    /// Refused commands.
    pub hardening: Hardening,
}

fn non_zero(value: Option<i32>, default: i32) -> i32 {
    value.filter(|v| *v != 0).unwrap_or(default)
}

impl<'a> Server<'a> {
    /// Resolves the defaults of `spec.memcached`, then the settings `extraArgs` overrides.
    #[must_use]
    pub fn of(config: Option<&'a MemcachedConfig>) -> Self {
        let c = config;
        let server = Self {
            max_memory_mb: non_zero(c.and_then(|c| c.max_memory_mb), DEFAULT_MAX_MEMORY_MB),
            max_connections: non_zero(c.and_then(|c| c.max_connections), DEFAULT_MAX_CONNECTIONS),
            threads: non_zero(c.and_then(|c| c.threads), DEFAULT_THREADS),
            max_item_size: c
                .and_then(|c| c.max_item_size.as_deref())
                .filter(|s| !s.is_empty())
                .unwrap_or(DEFAULT_MAX_ITEM_SIZE),
            verbosity: c.and_then(|c| c.verbosity).unwrap_or(DEFAULT_VERBOSITY),
            extra_args: c.and_then(|c| c.extra_args.as_deref()).unwrap_or(&[]),
            hardening: Hardening::of(c.and_then(|c| c.hardening.as_ref())),
        };
        server.overridden(&command_line::read(server.extra_args))
    }

    /// The settings with the last valid `-m`, `-c` and `-I` of `line` (its `extraArgs`); an
    /// invalid one is refused by [`validate_args`] and leaves the field's value.
    fn overridden(mut self, line: &CommandLine<'a>) -> Self {
        if let Some(Ok(mb)) = line.last('m').map(|o| within(o.value, MAX_MEMORY_MB)) {
            self.max_memory_mb = mb;
        }
        if let Some(Ok(n)) = line.last('c').map(|o| within(o.value, MAX_CONNECTIONS)) {
            self.max_connections = n;
        }
        let size = line.last('I').and_then(|o| o.value);
        if let Some(size) = size.filter(|s| command_line::item_size_bytes(s).is_some()) {
            self.max_item_size = size;
        }
        self
    }
}

/// A flag's value as a whole number within `bounds`, or why not.
fn within(value: Option<&str>, (min, max): (i32, i32)) -> Result<i32, String> {
    value
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| format!("must be a whole number from {min} to {max}"))
}

/// The rules of `extraArgs` as memcached reads them ([`command_line::read`]): every argument
/// one memcached accepts (it exits on the others), and `-m`, `-c` and `-I`, which the hook
/// reads for the memory request, the volumes and the extstore rules, within the bounds of the
/// fields they override.
pub(super) fn validate_args(out: &mut Out, line: &CommandLine<'_>) {
    let field = |at: usize| format!("spec.memcached.extraArgs[{at}]");
    for refused in &line.refused {
        out.push(Violation::invalid(
            field(refused.at),
            quoted(line.arg(refused.at)),
            format!("{}: memcached would exit", refused.reason),
        ));
    }
    for (flag, name, bounds) in [
        ('m', "maxMemoryMB", MAX_MEMORY_MB),
        ('c', "maxConnections", MAX_CONNECTIONS),
    ] {
        for o in line.all(flag) {
            if let Err(why) = within(o.value, bounds) {
                out.push(Violation::invalid(
                    field(o.value_at),
                    quoted(line.arg(o.value_at)),
                    format!("-{flag} {why}, as {name}"),
                ));
            }
        }
    }
    for o in line.all('B') {
        if !matches!(o.value, Some("auto" | "binary" | "ascii")) {
            out.push(Violation::invalid(
                field(o.value_at),
                quoted(line.arg(o.value_at)),
                "-B must be auto, binary or ascii: memcached would exit",
            ));
        }
    }
    for o in line.all('I') {
        if o.value.and_then(command_line::item_size_bytes).is_none() {
            out.push(Violation::invalid(
                field(o.value_at),
                quoted(line.arg(o.value_at)),
                "-I must be a size in bytes, or a number followed by k or m",
            ));
        }
    }
}

/// What the pattern [`ITEM_SIZE_PATTERN`] accepts.
fn is_item_size(text: &str) -> bool {
    text.strip_suffix(['k', 'm'])
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

fn wide((min, max): (i32, i32)) -> (i64, i64) {
    (i64::from(min), i64::from(max))
}

/// The schema rules of `spec.memcached`.
pub(super) fn validate(out: &mut Out, c: &MemcachedConfig) {
    // Literal paths: a valid spec allocates no field name.
    macro_rules! field {
        ($name:literal) => {
            concat!("spec.memcached.", $name)
        };
    }
    let int = |v: Option<i32>| v.map(i64::from);
    let default = Zero::MeansDefault;
    check::range(
        out,
        field!("maxMemoryMB"),
        int(c.max_memory_mb),
        wide(MAX_MEMORY_MB),
        default,
    );
    let connections = int(c.max_connections);
    check::range(
        out,
        field!("maxConnections"),
        connections,
        wide(MAX_CONNECTIONS),
        default,
    );
    check::range(
        out,
        field!("threads"),
        int(c.threads),
        wide(THREADS),
        default,
    );
    let item_size = c.max_item_size.as_deref();
    if item_size.is_some_and(|s| is_too_long(s, ITEM_SIZE_LENGTH)) {
        out.push(Violation::too_long(field!("maxItemSize"), ITEM_SIZE_LENGTH));
    } else if let Some(size) = item_size.filter(|s| !s.is_empty() && !is_item_size(s)) {
        let detail = format!("should match '{ITEM_SIZE_PATTERN}'");
        out.push(Violation::invalid(
            field!("maxItemSize"),
            quoted(size),
            detail,
        ));
    }
    check::range(
        out,
        field!("verbosity"),
        int(c.verbosity),
        wide(VERBOSITY),
        Zero::IsAValue,
    );
    let args_field = field!("extraArgs");
    let args = check::items(out, args_field, c.extra_args.as_deref(), EXTRA_ARGS);
    for (index, arg) in args.iter().enumerate() {
        if is_too_long(arg, EXTRA_ARG_LENGTH) {
            let field = format!("{args_field}[{index}]");
            out.push(Violation::too_long(field, EXTRA_ARG_LENGTH));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_empty_settings_mean_default() {
        let config = MemcachedConfig {
            max_memory_mb: Some(0),
            max_connections: Some(0),
            threads: Some(0),
            max_item_size: Some(String::new()),
            ..MemcachedConfig::default()
        };
        for server in [Server::of(None), Server::of(Some(&config))] {
            let shown = (
                server.max_memory_mb,
                server.max_connections,
                server.threads,
                server.max_item_size,
                server.verbosity,
            );
            assert_eq!(shown, (64, 1024, 4, "1m", 0));
        }
    }
}
