//! Mounted Secret files as kubelet updates them: the one watcher of the hook's server (its TLS
//! material and credentials) and of the reload agent in a memcached pod. In a Secret volume
//! every file is a symlink `name -> ..data/name`, and `..data` is a symlink to a timestamped
//! directory that kubelet replaces with one `rename`. A [`Snapshot`] reads a group of files
//! between two reads of the `..data` targets, so it never mixes two versions (a certificate with
//! the previous key).

use std::path::{Path, PathBuf};

/// The symlink kubelet swaps in a Secret (or ConfigMap, projected) volume.
const DATA_LINK: &str = "..data";
/// Reads of a group before giving up until the next poll (a swap in the middle of every read).
const ATTEMPTS: usize = 3;
/// Largest file read; Secret data is at most 1 MiB.
const MAX_FILE: u64 = 1 << 20;

/// Why a group of files could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// A file could not be opened or read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A file is larger than a Secret can be.
    #[error("{path}: larger than {MAX_FILE} bytes")]
    TooLarge {
        /// The file.
        path: String,
    },
    /// kubelet swapped the volume during every attempt.
    #[error("the files changed during each of {ATTEMPTS} reads")]
    Unstable,
}

/// The contents of a group of files at one moment, with a digest to compare moments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The content of each file, in the group's order.
    pub contents: Vec<Vec<u8>>,
    /// BLAKE3 of the contents (with their lengths).
    pub digest: [u8; 32],
}

impl Snapshot {
    /// The content of the `index`-th file of the group.
    #[must_use]
    pub fn file(&self, index: usize) -> &[u8] {
        self.contents.get(index).map_or(&[], Vec::as_slice)
    }
}

/// A group of files that change together (a TLS chain and its key; an auth file).
#[derive(Debug, Clone)]
pub struct Group {
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl Group {
    /// The group of `files`.
    #[must_use]
    pub fn new(files: Vec<PathBuf>) -> Self {
        let mut dirs: Vec<PathBuf> = files
            .iter()
            .map(|f| f.parent().unwrap_or(Path::new(".")).to_path_buf())
            .collect();
        dirs.sort();
        dirs.dedup();
        Self { files, dirs }
    }

    /// The files of the group.
    #[must_use]
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Where each directory's `..data` points (`None` outside a kubelet volume).
    fn targets(&self) -> Vec<Option<PathBuf>> {
        self.dirs
            .iter()
            .map(|d| std::fs::read_link(d.join(DATA_LINK)).ok())
            .collect()
    }

    /// Reads every file of the group at one version of the volume.
    ///
    /// # Errors
    /// A file that cannot be read, or a volume that changed during every attempt.
    pub fn snapshot(&self) -> Result<Snapshot, WatchError> {
        for _ in 0..ATTEMPTS {
            let before = self.targets();
            let contents = self
                .files
                .iter()
                .map(|p| read(p))
                .collect::<Result<Vec<_>, _>>()?;
            if self.targets() == before {
                let mut hasher = blake3::Hasher::new();
                for content in &contents {
                    hasher.update(&(content.len() as u64).to_le_bytes());
                    hasher.update(content);
                }
                return Ok(Snapshot {
                    contents,
                    digest: *hasher.finalize().as_bytes(),
                });
            }
        }
        Err(WatchError::Unstable)
    }
}

fn read(path: &Path) -> Result<Vec<u8>, WatchError> {
    use std::io::Read as _;
    let err = |source| WatchError::Read {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(err)?;
    let mut content = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut content)
        .map_err(err)?;
    if content.len() as u64 > MAX_FILE {
        return Err(WatchError::TooLarge {
            path: path.display().to_string(),
        });
    }
    Ok(content)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A Secret volume laid out and updated the way kubelet's atomic writer does it.
    pub(crate) struct Volume {
        pub dir: PathBuf,
        version: u32,
    }

    impl Volume {
        pub(crate) fn new(name: &str, files: &[(&str, &[u8])]) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "memcached-hook-mounted-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let mut volume = Self { dir, version: 0 };
            volume.publish(files);
            for (file, _) in files {
                symlink(format!("{DATA_LINK}/{file}"), volume.dir.join(file)).unwrap();
            }
            volume
        }

        /// Writes a new timestamped directory, then swaps `..data` to it in one rename.
        pub(crate) fn publish(&mut self, files: &[(&str, &[u8])]) {
            self.version += 1;
            let version = format!("..2026_11_23_20_00_00.{}", self.version);
            std::fs::create_dir(self.dir.join(&version)).unwrap();
            for (file, content) in files {
                std::fs::write(self.dir.join(&version).join(file), content).unwrap();
            }
            let tmp = self.dir.join("..data_tmp");
            symlink(&version, &tmp).unwrap();
            std::fs::rename(&tmp, self.dir.join(DATA_LINK)).unwrap();
        }

        pub(crate) fn path(&self, file: &str) -> PathBuf {
            self.dir.join(file)
        }
    }

    impl Drop for Volume {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn an_atomic_swap_is_a_new_snapshot_and_a_read_sees_one_version() {
        let mut volume = Volume::new("swap", &[("tls.crt", b"cert-1"), ("tls.key", b"key-1")]);
        let group = Group::new(vec![volume.path("tls.crt"), volume.path("tls.key")]);
        let first = group.snapshot().unwrap();
        assert_eq!(first.contents, [b"cert-1".to_vec(), b"key-1".to_vec()]);
        assert_eq!(group.snapshot().unwrap(), first, "nothing changed");

        volume.publish(&[("tls.crt", b"cert-2"), ("tls.key", b"key-2")]);
        let second = group.snapshot().unwrap();
        assert_ne!(second.digest, first.digest);
        assert_eq!(second.contents, [b"cert-2".to_vec(), b"key-2".to_vec()]);

        // Same content under a new timestamped directory: no change to act on.
        volume.publish(&[("tls.crt", b"cert-2"), ("tls.key", b"key-2")]);
        assert_eq!(group.snapshot().unwrap().digest, second.digest);
    }

    #[test]
    fn reads_racing_swaps_never_mix_versions() {
        let mut volume = Volume::new("race", &[("tls.crt", b"cert-0"), ("tls.key", b"key-0")]);
        let group = Group::new(vec![volume.path("tls.crt"), volume.path("tls.key")]);
        let writer = std::thread::spawn(move || {
            for i in 1..=300 {
                let (c, k) = (format!("cert-{i}"), format!("key-{i}"));
                volume.publish(&[("tls.crt", c.as_bytes()), ("tls.key", k.as_bytes())]);
            }
            volume
        });
        let mut consistent = 0;
        for _ in 0..300 {
            if let Ok(s) = group.snapshot() {
                let cert = String::from_utf8(s.contents[0].clone()).unwrap();
                let key = String::from_utf8(s.contents[1].clone()).unwrap();
                assert_eq!(
                    cert.trim_start_matches("cert-"),
                    key.trim_start_matches("key-")
                );
                consistent += 1;
            }
        }
        drop(writer.join().unwrap());
        assert!(consistent > 0);
    }

    #[test]
    fn content_not_length_or_time_decides() {
        let mut volume = Volume::new("same-len", &[("password-file", b"user:aaaa\n")]);
        let group = Group::new(vec![volume.path("password-file")]);
        let first = group.snapshot().unwrap();
        volume.publish(&[("password-file", b"user:bbbb\n")]);
        assert_ne!(group.snapshot().unwrap().digest, first.digest);
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let volume = Volume::new("missing", &[("tls.crt", b"c")]);
        let group = Group::new(vec![volume.path("tls.crt"), volume.path("ca.crt")]);
        let error = group.snapshot().unwrap_err().to_string();
        assert!(error.contains("ca.crt"), "{error}");
    }

    #[test]
    fn plain_files_without_a_data_link_work_too() {
        let dir =
            std::env::temp_dir().join(format!("memcached-hook-agent-plain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("password-file");
        std::fs::write(&file, "a:b\n").unwrap();
        let group = Group::new(vec![file.clone()]);
        let first = group.snapshot().unwrap();
        std::fs::write(&file, "a:c\n").unwrap();
        assert_ne!(group.snapshot().unwrap().digest, first.digest);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
