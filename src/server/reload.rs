//! Values built from files (credentials, TLS material) and rebuilt when the files change, as a
//! mounted Secret does on rotation: a change is a new digest of the files' contents, read at one
//! version of the volume (`crate::mounted`, the reload agent's watcher too). Readers take the
//! current value from an `ArcSwap`, without a lock; a rebuild that fails keeps the previous value
//! in force.

use std::fmt::Display;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::mounted::Group;

/// The digest of the files' contents, read at one version of the volume (`None` when they
/// cannot be read).
type Digest = Option<[u8; 32]>;

/// A value built from `paths`.
pub struct Reloading<T> {
    files: Group,
    what: &'static str,
    current: ArcSwap<T>,
    digest: ArcSwap<Digest>,
}

impl<T> Reloading<T> {
    /// Builds the first value.
    ///
    /// # Errors
    /// Whatever `build` returns.
    pub fn new<E>(
        paths: Vec<PathBuf>,
        what: &'static str,
        build: impl FnOnce() -> Result<T, E>,
    ) -> Result<Self, E> {
        let files = Group::new(paths);
        let digest = digest(&files);
        Ok(Self {
            current: ArcSwap::from_pointee(build()?),
            digest: ArcSwap::from_pointee(digest),
            files,
            what,
        })
    }

    /// The value in force.
    #[must_use]
    pub fn current(&self) -> Arc<T> {
        self.current.load_full()
    }

    /// Rebuilds the value if a file changed; keeps the old one when `build` fails. Returns
    /// whether a new value is in force.
    pub fn reload_if_changed<E: Display>(&self, build: impl FnOnce() -> Result<T, E>) -> bool {
        let now = digest(&self.files);
        if **self.digest.load() == now {
            return false;
        }
        self.digest.store(Arc::new(now));
        match build() {
            Ok(value) => {
                self.current.store(Arc::new(value));
                tracing::info!(what = self.what, "reloaded");
                true
            }
            Err(error) => {
                tracing::warn!(what = self.what, %error, "{NOT_RELOADED}");
                false
            }
        }
    }
}

/// The digest of `files` now.
fn digest(files: &Group) -> Digest {
    files.snapshot().ok().map(|s| s.digest)
}

/// Calls `reload` on `target` every `period` until the process ends.
pub fn poll<S: Send + Sync + 'static>(target: &Arc<S>, period: Duration, reload: fn(&S) -> bool) {
    let target = Arc::clone(target);
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            reload(&target);
        }
    });
}

/// Logged when a changed file cannot be loaded.
const NOT_RELOADED: &str = "not reloaded; the previous one stays in force";

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::Reloading;
    use crate::mounted::tests::Volume;

    #[test]
    fn a_kubelet_swap_rebuilds_once_and_the_same_content_never() {
        let mut volume = Volume::new("server-reload", &[("token", b"first")]);
        let path = volume.path("token");
        let builds = AtomicU32::new(0);
        let build = || -> Result<String, std::io::Error> {
            builds.fetch_add(1, Ordering::SeqCst);
            std::fs::read_to_string(&path)
        };
        let value = Reloading::new(vec![path.clone()], "token", build).unwrap();
        assert_eq!(*value.current(), "first");
        assert!(!value.reload_if_changed(build), "nothing changed");

        // The same content published again (a new `..data`, new times): nothing to rebuild.
        volume.publish(&[("token", b"first")]);
        assert!(!value.reload_if_changed(build));
        assert_eq!(builds.load(Ordering::SeqCst), 1);

        volume.publish(&[("token", b"second")]);
        assert!(value.reload_if_changed(build));
        assert_eq!(*value.current(), "second");
        assert!(!value.reload_if_changed(build), "rebuilt once");
        assert_eq!(builds.load(Ordering::SeqCst), 2);
    }
}
