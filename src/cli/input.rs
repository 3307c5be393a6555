//! Reading the file a command is given, with a bound: `render /dev/zero` ends with an error
//! after the bound instead of reading until memory runs out.

use std::fs::File;
use std::io::Read as _;
use std::path::Path;

use anyhow::{Context as _, bail};
use memcached_hook::server::DEFAULT_BODY_LIMIT;

/// The largest file `render` and `replay` read: the largest request body the server accepts
/// by default. A Memcached is a few KiB; a sync request with its children well under a MiB.
pub const INPUT_LIMIT: usize = DEFAULT_BODY_LIMIT;

/// The whole file at `path`, if it is at most `limit` bytes.
///
/// # Errors
/// The file cannot be read, or it is longer than `limit` (only `limit + 1` bytes are read).
pub fn read_bounded(path: &Path, limit: usize) -> anyhow::Result<Vec<u8>> {
    let file = File::open(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let mut bytes = Vec::new();
    let bound = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    file.take(bound)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    if bytes.len() > limit {
        bail!(
            "{}: larger than {limit} bytes, the most a single input may hold (the server's \
             default --body-limit); is it the right file?",
            path.display()
        );
    }
    Ok(bytes)
}

/// All of standard input, if it is at most `limit` bytes.
///
/// # Errors
/// Standard input cannot be read, or it is longer than `limit`.
pub fn read_stdin_bounded(limit: usize) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let bound = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    std::io::stdin()
        .lock()
        .take(bound)
        .read_to_end(&mut bytes)
        .context("standard input: cannot read")?;
    if bytes.len() > limit {
        bail!("standard input: larger than {limit} bytes, the most a single input may hold");
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_ends_in_an_error_at_the_bound() {
        let err = read_bounded(Path::new("/dev/zero"), 1024).expect_err("bounded");
        assert!(err.to_string().contains("larger than 1024 bytes"), "{err}");
    }

    #[test]
    fn a_file_at_the_bound_is_read_whole() {
        let path =
            std::env::temp_dir().join(format!("memcached-hook-input-{}", std::process::id()));
        std::fs::write(&path, [b'x'; 16]).expect("write");
        assert_eq!(read_bounded(&path, 16).expect("read").len(), 16);
        assert!(read_bounded(&path, 15).is_err());
        std::fs::remove_file(&path).ok();
    }
}
