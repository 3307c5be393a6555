//! Talking to the memcached of the same pod: its loopback plaintext listener for `refresh_certs`
//! (after ASCII authentication when `-Y` is on), and SIGHUP for the auth file (memcached has no
//! command for that; it needs `shareProcessNamespace: true` and the same user as memcached).

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::shared::check::Credentials;

/// Longest reply line read (memcached's `refresh_certs` error carries a path and an SSL error).
const MAX_LINE: usize = 8192;
/// Most lines read from one `stats` reply (memcached 1.6 sends about a hundred).
const MAX_STAT_LINES: usize = 1024;
/// Most `/proc` entries looked at when searching for memcached.
const MAX_PROCESSES: usize = 65_536;

/// Why memcached could not be told.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// memcached does not listen (yet).
    #[error("connecting to {addr}: {source}")]
    Connect {
        /// The admin address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// The auth file memcached reads could not be written.
    #[error("writing memcached's auth file {path}: {source}")]
    Copy {
        /// The copy memcached's `-Y` points at.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The connection failed midway.
    #[error("talking to memcached: {0}")]
    Io(#[from] std::io::Error),
    /// The login was refused.
    #[error("memcached refused the agent's login ({0})")]
    Login(String),
    /// memcached answered with an error.
    #[error("memcached answered {0:?}")]
    Refused(String),
    /// No memcached process to signal.
    #[error(
        "no memcached process named {0:?} is visible (the pod needs shareProcessNamespace: true)"
    )]
    NoProcess(String),
    /// More than one process by that name.
    #[error("{0} processes named {1:?}; not signalling any")]
    Ambiguous(usize, String),
    /// No process by that name holds the listener of the admin port.
    #[error(
        "no process named {name:?} listening on port {port} is visible (the pod needs \
         shareProcessNamespace: true and the agent memcached's user)"
    )]
    NoListener {
        /// The process name.
        name: String,
        /// The admin port.
        port: u16,
    },
    /// memcached's proxy refused its new route configuration.
    #[error("the proxy did not load the new routes: {0}")]
    RoutesRefused(String),
    /// memcached's proxy started no load after SIGHUP.
    #[error("the proxy did not reload: {0}")]
    NoReload(String),
    /// The kernel refused the signal.
    #[error("signalling memcached (pid {pid}): {source} (the agent must run as memcached's user)")]
    Signal {
        /// memcached's pid.
        pid: i32,
        /// The error.
        source: std::io::Error,
    },
}

impl AdminError {
    /// memcached not listening (yet): not a failure before the agent's first delivery.
    #[must_use]
    pub fn unreachable(&self) -> bool {
        matches!(self, Self::Connect { .. })
    }
}

/// memcached's loopback listener.
#[derive(Debug, Clone, Copy)]
pub struct Admin {
    /// memcached's plaintext listener on 127.0.0.1.
    pub addr: SocketAddr,
    /// Time allowed for connecting and for each reply.
    pub timeout: Duration,
}

struct Connection {
    stream: BufReader<TcpStream>,
}

impl Connection {
    fn line(&mut self) -> Result<String, AdminError> {
        let mut out = Vec::new();
        let limit = u64::try_from(MAX_LINE).unwrap_or(u64::MAX);
        (&mut self.stream).take(limit).read_until(b'\n', &mut out)?;
        if out.is_empty() {
            return Err(AdminError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        if !out.ends_with(b"\r\n") {
            return Err(AdminError::Refused(
                "an over-long or unterminated reply".into(),
            ));
        }
        out.truncate(out.len() - 2);
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn command(&mut self, request: &[u8]) -> Result<String, AdminError> {
        self.stream.get_mut().write_all(request)?;
        self.line()
    }

    /// `request` (`stats`, `stats settings`): its `STAT <name> <value>` lines up to `END`.
    fn stats(&mut self, request: &[u8]) -> Result<BTreeMap<String, String>, AdminError> {
        let mut out = BTreeMap::new();
        let mut line = self.command(request)?;
        for _ in 0..MAX_STAT_LINES {
            if line == "END" {
                return Ok(out);
            }
            let Some((name, value)) = line.strip_prefix("STAT ").and_then(|s| s.split_once(' '))
            else {
                return Err(AdminError::Refused(line));
            };
            out.insert(name.to_owned(), value.to_owned());
            line = self.line()?;
        }
        Err(AdminError::Refused(format!(
            "more than {MAX_STAT_LINES} lines of stats"
        )))
    }
}

/// What `stats` and `stats settings` answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// `stats`: counters and gauges of the running server.
    pub general: BTreeMap<String, String>,
    /// `stats settings`: the options it runs with (`maxconns` is `-c`).
    pub settings: BTreeMap<String, String>,
}

impl Admin {
    fn connect(&self, login: Option<&Credentials>) -> Result<Connection, AdminError> {
        let stream = TcpStream::connect_timeout(&self.addr, self.timeout).map_err(|source| {
            AdminError::Connect {
                addr: self.addr,
                source,
            }
        })?;
        stream.set_read_timeout(Some(self.timeout))?;
        stream.set_write_timeout(Some(self.timeout))?;
        let mut connection = Connection {
            stream: BufReader::new(stream),
        };
        if let Some(c) = login {
            // ASCII auth: a `set` whose value is "<user> <password>" (the key is ignored).
            let token = format!("{} {}", c.user, c.password);
            let request = format!("set auth 0 0 {}\r\n{token}\r\n", token.len());
            let reply = connection.command(request.as_bytes())?;
            if reply != "STORED" {
                return Err(AdminError::Login(reply));
            }
        }
        Ok(connection)
    }

    /// Whether memcached accepts `login` now (after a SIGHUP it takes up to a second).
    ///
    /// # Errors
    /// memcached unreachable.
    pub fn accepts(&self, login: &Credentials) -> Result<bool, AdminError> {
        match self.connect(Some(login)) {
            Ok(_) => Ok(true),
            Err(AdminError::Login(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `stats` alone, without a login (memcached's proxy answers it with its own counters).
    ///
    /// # Errors
    /// memcached unreachable, or a reply that is not a list of stats.
    pub fn general_stats(&self) -> Result<BTreeMap<String, String>, AdminError> {
        self.connect(None)?.stats(b"stats\r\n")
    }

    /// `stats` and `stats settings`, logged in with `login` when memcached runs with `-Y`.
    ///
    /// # Errors
    /// memcached unreachable, the login refused, or a reply that is not a list of stats.
    pub fn stats(&self, login: Option<&Credentials>) -> Result<Stats, AdminError> {
        let mut connection = self.connect(login)?;
        Ok(Stats {
            general: connection.stats(b"stats\r\n")?,
            settings: connection.stats(b"stats settings\r\n")?,
        })
    }

    /// Sends `refresh_certs`: memcached re-reads its chain, key and CA files for new connections.
    ///
    /// # Errors
    /// memcached unreachable, the login refused, or memcached's own error.
    pub fn refresh_certs(&self, login: Option<&Credentials>) -> Result<(), AdminError> {
        let reply = self.connect(login)?.command(b"refresh_certs\r\n")?;
        if reply == "OK" {
            Ok(())
        } else {
            Err(AdminError::Refused(reply))
        }
    }
}

/// The processes named `name` (their `/proc/<pid>/comm`), other than this one.
fn named(name: &str) -> Result<Vec<u32>, AdminError> {
    let own = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc")?.take(MAX_PROCESSES).flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own {
            continue;
        }
        if let Ok(comm) = std::fs::read_to_string(entry.path().join("comm"))
            && comm.trim_end() == name
        {
            found.push(pid);
        }
    }
    Ok(found)
}

/// The one process named `name` (its `/proc/<pid>/comm`), other than this one.
///
/// # Errors
/// None or more than one such process.
pub fn find_process(name: &str) -> Result<i32, AdminError> {
    match named(name)?.as_slice() {
        [pid] => i32::try_from(*pid).map_err(|_| AdminError::NoProcess(name.to_owned())),
        [] => Err(AdminError::NoProcess(name.to_owned())),
        many => Err(AdminError::Ambiguous(many.len(), name.to_owned())),
    }
}

/// The one process named `name` that holds a TCP socket listening on `port` (from
/// `/proc/net/tcp{,6}` of the pod's network and each candidate's `/proc/<pid>/fd`): the process
/// that answers on the admin address, even beside other processes of the same name.
///
/// # Errors
/// None or more than one such process.
pub fn find_listener(name: &str, port: u16) -> Result<i32, AdminError> {
    let sockets = listening_sockets(port);
    let none = || AdminError::NoListener {
        name: name.to_owned(),
        port,
    };
    if sockets.is_empty() {
        return Err(none());
    }
    let holders: Vec<u32> = named(name)?
        .into_iter()
        .filter(|pid| holds_any(*pid, &sockets))
        .collect();
    match holders.as_slice() {
        [pid] => i32::try_from(*pid).map_err(|_| none()),
        [] => Err(none()),
        many => Err(AdminError::Ambiguous(many.len(), name.to_owned())),
    }
}

/// The socket inodes listening on TCP `port` (any address, IPv4 or IPv6).
fn listening_sockets(port: u16) -> Vec<u64> {
    const LISTEN: &str = "0A";
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1).take(MAX_PROCESSES) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let listens_on = local
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                == Some(port);
            if listens_on
                && *state == LISTEN
                && let Ok(inode) = inode.parse::<u64>()
            {
                out.push(inode);
            }
        }
    }
    out
}

/// Whether the process `pid` has one of the `sockets` open.
fn holds_any(pid: u32, sockets: &[u64]) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.take(MAX_PROCESSES).flatten().any(|fd| {
        std::fs::read_link(fd.path()).ok().is_some_and(|target| {
            target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u64>().ok())
                .is_some_and(|inode| sockets.contains(&inode))
        })
    })
}

/// Sends SIGHUP to `pid` (memcached >= 1.5.15 re-reads its `-Y` file).
///
/// # Errors
/// The kernel's refusal (another user, no such process).
pub fn hangup(pid: i32) -> Result<(), AdminError> {
    signal(pid, rustix::process::Signal::HUP)
}

/// Sends `signal` to `pid`.
///
/// # Errors
/// The kernel's refusal (another user, no such process).
pub fn signal(pid: i32, signal: rustix::process::Signal) -> Result<(), AdminError> {
    let target = rustix::process::Pid::from_raw(pid).ok_or(AdminError::Signal {
        pid,
        source: std::io::ErrorKind::InvalidInput.into(),
    })?;
    rustix::process::kill_process(target, signal).map_err(|e| AdminError::Signal {
        pid,
        source: e.into(),
    })
}
