//! memcached's command line read as memcached 1.6's `getopt_long` reads it: short flags
//! clustered (`-vU11211`) or with attached values (`-m2048`), long names with `=value` or the
//! next argument and unique abbreviations (`--mem=64`), arguments that are not options skipped
//! (getopt moves them aside) and nothing read after `--`. Every rule that looks at `extraArgs`
//! and every setting read back from a running pod's arguments goes through [`read`].

/// Whether a flag takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Takes {
    /// No value (`-v`).
    Nothing,
    /// A value, attached or in the next argument (`-m 64`, `-m64`).
    Value,
    /// A value only when attached with `=` (`--verbose=2`); long name only.
    Attached,
}

/// memcached 1.6.45's options: the short flag, whether it takes a value, and its long name
/// (`-v` twice: the short flag takes no value, `--verbose` an attached one).
const OPTIONS: [(char, Takes, Option<&str>); 38] = [
    ('a', Takes::Value, Some("unix-mask")),
    ('A', Takes::Nothing, Some("enable-shutdown")),
    ('Z', Takes::Nothing, Some("enable-ssl")),
    ('p', Takes::Value, Some("port")),
    ('s', Takes::Value, Some("unix-socket")),
    ('U', Takes::Value, Some("udp-port")),
    ('m', Takes::Value, Some("memory-limit")),
    ('M', Takes::Nothing, Some("disable-evictions")),
    ('c', Takes::Value, Some("conn-limit")),
    ('k', Takes::Nothing, Some("lock-memory")),
    ('h', Takes::Nothing, Some("help")),
    ('i', Takes::Nothing, Some("license")),
    ('V', Takes::Nothing, Some("version")),
    ('r', Takes::Nothing, Some("enable-coredumps")),
    ('v', Takes::Nothing, None),
    ('d', Takes::Nothing, Some("daemon")),
    ('l', Takes::Value, Some("listen")),
    ('u', Takes::Value, Some("user")),
    ('P', Takes::Value, Some("pidfile")),
    ('f', Takes::Value, Some("slab-growth-factor")),
    ('n', Takes::Value, Some("slab-min-size")),
    ('t', Takes::Value, Some("threads")),
    ('D', Takes::Value, None),
    ('L', Takes::Nothing, Some("enable-largepages")),
    ('R', Takes::Value, Some("max-reqs-per-event")),
    ('C', Takes::Nothing, Some("disable-cas")),
    ('b', Takes::Value, Some("listen-backlog")),
    ('B', Takes::Value, Some("protocol")),
    ('I', Takes::Value, Some("max-item-size")),
    ('S', Takes::Nothing, Some("enable-sasl")),
    ('F', Takes::Nothing, Some("disable-flush-all")),
    ('X', Takes::Nothing, Some("disable-dumping")),
    ('W', Takes::Nothing, Some("disable-watch")),
    ('Y', Takes::Value, Some("auth-file")),
    ('e', Takes::Value, Some("memory-file")),
    ('o', Takes::Value, Some("extended")),
    ('N', Takes::Value, Some("napi-ids")),
    // `--verbose` takes an optional `=value` (which memcached ignores); `-v` takes none.
    ('v', Takes::Attached, Some("verbose")),
];

/// One option as memcached reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opt<'a> {
    /// The short flag the option is (`'m'` for `-m`, `-m64`, `--memory-limit`).
    pub flag: char,
    /// Its value, with leading whitespace removed as memcached does.
    pub value: Option<&'a str>,
    /// The argument the option is written in.
    pub at: usize,
    /// The argument its value is written in (`at` when attached, `at + 1` when separate).
    pub value_at: usize,
}

/// An argument memcached refuses: it prints the reason and exits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The argument.
    pub at: usize,
    /// Why, in getopt's words.
    pub reason: String,
}

/// A command line as memcached reads it: its options in order, and the arguments it refuses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandLine<'a> {
    /// The arguments read.
    pub args: &'a [String],
    /// The options, in order.
    pub options: Vec<Opt<'a>>,
    /// Arguments memcached refuses (it would not start).
    pub refused: Vec<Refused>,
}

impl<'a> CommandLine<'a> {
    /// The argument at `at`, as written.
    #[must_use]
    pub fn arg(&self, at: usize) -> &'a str {
        self.args.get(at).map_or("", String::as_str)
    }

    /// Every option of `flag`, in order.
    pub fn all(&self, flag: char) -> impl Iterator<Item = &Opt<'a>> + '_ {
        self.options.iter().filter(move |o| o.flag == flag)
    }

    /// The value of the last option of `flag` (memcached keeps the last one).
    #[must_use]
    pub fn last(&self, flag: char) -> Option<&Opt<'a>> {
        self.all(flag).last()
    }

    /// Whether `flag` is given.
    #[must_use]
    pub fn has(&self, flag: char) -> bool {
        self.all(flag).next().is_some()
    }

    /// Every `-o` sub-option (`ext_path=/x:1g` of `-o no_lru_crawler,ext_path=/x:1g`), with the
    /// option it is written in.
    pub fn extended(&self) -> impl Iterator<Item = (&Opt<'a>, SubOption<'a>)> + '_ {
        self.all('o')
            .flat_map(|o| sub_options(o.value.unwrap_or_default()).map(move |s| (o, s)))
    }
}

/// One `-o` sub-option: `name` or `name=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubOption<'a> {
    /// The name (`ext_path`).
    pub name: &'a str,
    /// The value after the first `=`, when given.
    pub value: Option<&'a str>,
    /// The sub-option as written (`ext_path=/x:1g`).
    pub text: &'a str,
}

/// The sub-options of a `-o` value, split on commas as memcached's `getsubopt` does.
pub fn sub_options(value: &str) -> impl Iterator<Item = SubOption<'_>> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|text| match text.split_once('=') {
            Some((name, value)) => SubOption {
                name,
                value: Some(value),
                text,
            },
            None => SubOption {
                name: text,
                value: None,
                text,
            },
        })
}

fn short(flag: char) -> Option<Takes> {
    OPTIONS
        .iter()
        .find(|(f, takes, _)| *f == flag && *takes != Takes::Attached)
        .map(|(_, takes, _)| *takes)
}

/// The long option `name` names: itself, or the only one it abbreviates.
fn long(name: &str) -> Result<(char, Takes), &'static str> {
    let names = OPTIONS
        .iter()
        .filter_map(|(f, takes, long)| long.map(|l| (l, *f, *takes)));
    if let Some((_, f, takes)) = names.clone().find(|(l, _, _)| *l == name) {
        return Ok((f, takes));
    }
    let mut matching = names.filter(|(l, _, _)| l.starts_with(name));
    match (matching.next(), matching.next()) {
        (Some((_, f, takes)), None) => Ok((f, takes)),
        (Some(_), Some(_)) => Err("is ambiguous"),
        (None, _) => Err("is not a memcached option"),
    }
}

/// memcached strips leading whitespace from every value.
fn trimmed(value: &str) -> &str {
    value.trim_start_matches(|c: char| c.is_ascii_whitespace())
}

/// Reads `args` (the arguments after the program's name) as memcached does.
#[must_use]
pub fn read(args: &[String]) -> CommandLine<'_> {
    let mut out = CommandLine {
        args,
        ..CommandLine::default()
    };
    let mut at = 0;
    while at < args.len() {
        let arg = args[at].as_str();
        let next = args.get(at + 1).map(String::as_str);
        let taken = if arg == "--" {
            break;
        } else if let Some(body) = arg.strip_prefix("--") {
            out.long(at, body, next)
        } else if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            out.cluster(at, cluster, next)
        } else {
            0
        };
        at += 1 + taken;
    }
    out
}

impl<'a> CommandLine<'a> {
    fn refuse(&mut self, at: usize, reason: String) {
        self.refused.push(Refused { at, reason });
    }

    fn push(&mut self, flag: char, value: Option<&'a str>, at: usize, taken: usize) {
        self.options.push(Opt {
            flag,
            value: value.map(trimmed),
            at,
            value_at: at + taken,
        });
    }

    /// Reads `--<body>` at `at`; the arguments it takes after its own (0 or 1).
    fn long(&mut self, at: usize, body: &'a str, next: Option<&'a str>) -> usize {
        let (name, attached) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        match long(name) {
            Err(why) => self.refuse(at, format!("--{name} {why}")),
            Ok((flag, Takes::Nothing)) if attached.is_some() => {
                self.refuse(at, format!("--{name} takes no value (-{flag})"));
            }
            Ok((flag, Takes::Nothing | Takes::Attached)) => self.push(flag, attached, at, 0),
            Ok((flag, Takes::Value)) => match (attached, next) {
                (Some(value), _) => self.push(flag, Some(value), at, 0),
                (None, Some(value)) => {
                    self.push(flag, Some(value), at, 1);
                    return 1;
                }
                (None, None) => self.refuse(at, format!("--{name} needs a value")),
            },
        }
        0
    }

    /// Reads the short flags `-<cluster>` at `at`; the arguments it takes after its own.
    fn cluster(&mut self, at: usize, cluster: &'a str, next: Option<&'a str>) -> usize {
        for (offset, flag) in cluster.char_indices() {
            match short(flag) {
                None => self.refuse(at, format!("-{flag} is not a memcached option")),
                Some(Takes::Value) => {
                    let rest = &cluster[offset + flag.len_utf8()..];
                    match (rest, next) {
                        ("", Some(value)) => {
                            self.push(flag, Some(value), at, 1);
                            return 1;
                        }
                        ("", None) => self.refuse(at, format!("-{flag} needs a value")),
                        (value, _) => self.push(flag, Some(value), at, 0),
                    }
                    return 0;
                }
                Some(_) => self.push(flag, None, at, 0),
            }
        }
        0
    }
}

/// A number as C's `atoi` reads it (leading whitespace, a sign, digits up to the first other
/// character; `0` when there are none); `None` when it does not fit 64 bits.
#[must_use]
pub fn atoi(text: &str) -> Option<i64> {
    let text = trimmed(text);
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let n: i64 = match &digits[..end] {
        "" => 0,
        d => d.parse().ok()?,
    };
    Some(if negative { -n } else { n })
}

/// `-I`'s value in bytes (`1m`, `512k`, `2097152`), as memcached reads it: a `k` or `m` (either
/// case) multiplies the number before it; `None` for what memcached would not read as a size.
#[must_use]
pub fn item_size_bytes(text: &str) -> Option<u64> {
    let (digits, unit) = match text.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1 << 10),
        None => match text.strip_suffix(['m', 'M']) {
            Some(d) => (d, 1 << 20),
            None => (text, 1),
        },
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

#[cfg(test)]
mod tests;
