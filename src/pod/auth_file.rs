//! The copy of the SASL auth file that memcached's `-Y` reads. memcached before 1.6.32 drops the
//! last byte of a one-entry file without a `\n` (`user:password` is loaded as `user:passwor`),
//! and a Secret written as `stringData` usually has none. So memcached never
//! reads the mounted Secret: `memcached-hook auth-file` (an init container) writes a normalised
//! copy into an in-memory `emptyDir` before memcached starts, and the reload agent rewrites it
//! before each SIGHUP.
//!
//! Normalising keeps every entry byte for byte and changes only line ends: each line ends with
//! `\n`, a `\r` before a line end is dropped (memcached ends a password at `\r` anyway), and
//! empty lines are dropped (memcached refuses a file with one). The result must then pass
//! [`check::auth_file`]. Nothing of the content is ever logged.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use super::shared::check::{self, CheckError, Credentials};
use crate::mounted::Group;

/// The copy's mode: readable by the pod's containers that mount it (memcached and the stats
/// exporter may run as different users), as kubelet makes the Secret's own file (0644), and
/// written by nobody: it is only ever replaced whole.
pub const COPY_MODE: u32 = 0o444;

/// An auth file as memcached must read it, and its first entry (the agent's own login).
#[derive(Debug, PartialEq, Eq)]
pub struct Normalised {
    /// The file memcached reads: every line ends with `\n`.
    pub bytes: Vec<u8>,
    /// Its first entry.
    pub login: Credentials,
}

/// The auth file `content` with its line ends normalised, checked.
///
/// # Errors
/// A file [`check::auth_file`] refuses once its line ends are normalised.
pub fn normalise(content: &[u8]) -> Result<Normalised, CheckError> {
    let mut bytes = Vec::with_capacity(content.len() + 1);
    for line in content.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.is_empty() {
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
    }
    let login = check::auth_file(&bytes)?;
    Ok(Normalised { bytes, login })
}

/// Replaces `path` with `bytes` in one rename (memcached never reads half a file), unless it
/// already holds them. Whether it was written.
///
/// # Errors
/// The file cannot be written or renamed into place.
pub fn write_copy(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    if std::fs::read(path).is_ok_and(|current| current == bytes) {
        return Ok(false);
    }
    let name = path.file_name().map_or_else(
        || std::ffi::OsString::from("auth-file"),
        std::ffi::OsStr::to_os_string,
    );
    let mut temporary = std::ffi::OsString::from(".");
    temporary.push(&name);
    temporary.push(".new");
    let temporary = path.with_file_name(temporary);
    match std::fs::remove_file(&temporary) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(COPY_MODE)
        .open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    Ok(true)
}

/// `memcached-hook auth-file` options.
#[derive(Debug, Clone, clap::Args)]
pub struct CopyArgs {
    /// The mounted Secret's auth file.
    #[arg(long)]
    pub from: PathBuf,
    /// Where memcached's `-Y` points: the normalised copy is written there.
    #[arg(long)]
    pub to: PathBuf,
}

/// Why the copy could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The Secret's file could not be read.
    #[error(transparent)]
    Read(#[from] crate::mounted::WatchError),
    /// The content is not an auth file memcached can use.
    #[error("{path}: {source}")]
    Refused {
        /// The Secret's file.
        path: String,
        /// What is wrong (never the content).
        source: CheckError,
    },
    /// The copy could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The copy.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Writes the normalised copy of `args.from` to `args.to`.
///
/// # Errors
/// An unreadable or refused Secret file, or a copy that cannot be written.
pub fn run(args: &CopyArgs) -> Result<(), CopyError> {
    let snapshot = Group::new(vec![args.from.clone()]).snapshot()?;
    let normalised = normalise(snapshot.file(0)).map_err(|source| CopyError::Refused {
        path: args.from.display().to_string(),
        source,
    })?;
    write_copy(&args.to, &normalised.bytes).map_err(|source| CopyError::Write {
        path: args.to.display().to_string(),
        source,
    })?;
    tracing::info!(to = %args.to.display(), "auth file written for memcached");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn bytes(content: &[u8]) -> Vec<u8> {
        normalise(content).unwrap().bytes
    }

    #[test]
    fn line_ends_are_normalised_and_entries_kept_byte_for_byte() {
        assert_eq!(bytes(b"user:password"), b"user:password\n");
        assert_eq!(bytes(b"user:password\n"), b"user:password\n");
        assert_eq!(bytes(b"user:password\r\n"), b"user:password\n");
        assert_eq!(bytes(b"user:password\r"), b"user:password\n");
        assert_eq!(bytes(b"a:1\r\nb:2"), b"a:1\nb:2\n");
        assert_eq!(bytes(b"a:1\n\nb:2\n\n\n"), b"a:1\nb:2\n");
        assert_eq!(bytes(b"a:p\xc3\xa9:x\n"), b"a:p\xc3\xa9:x\n");
        let n = normalise(b"user:password").unwrap();
        assert_eq!(
            (n.login.user.as_str(), n.login.password.as_str()),
            ("user", "password")
        );
    }

    #[test]
    fn what_memcached_cannot_use_is_refused_without_its_content() {
        for bad in [
            &b""[..],
            b"\r\n\n",
            b"user-without-colon",
            b"us er:pw",
            b":pw",
        ] {
            let e = normalise(bad).unwrap_err();
            assert!(!e.to_string().contains("pw"), "{e}");
        }
    }

    #[test]
    fn the_copy_is_replaced_whole_and_read_only() {
        let dir =
            std::env::temp_dir().join(format!("memcached-hook-authfile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("password-file");
        assert!(write_copy(&copy, b"a:1\n").unwrap());
        assert!(
            !write_copy(&copy, b"a:1\n").unwrap(),
            "same content: untouched"
        );
        assert!(write_copy(&copy, b"a:2\n").unwrap());
        assert_eq!(std::fs::read(&copy).unwrap(), b"a:2\n");
        let mode = std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, COPY_MODE);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn run_copies_a_secret_volume_file() {
        let volume = crate::mounted::tests::Volume::new(
            "authfile-run",
            &[("password-file", b"user:password")],
        );
        let to = volume.dir.with_extension("copy");
        let args = CopyArgs {
            from: volume.path("password-file"),
            to: to.clone(),
        };
        run(&args).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"user:password\n");
        std::fs::remove_file(&to).unwrap();
        let bad = CopyArgs {
            from: volume.dir.join("missing"),
            to,
        };
        assert!(matches!(run(&bad), Err(CopyError::Read(_))));
    }
}
