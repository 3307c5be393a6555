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

use crate::mounted::{Group, Snapshot, WatchError};

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
    /// Builds the first value from the files' contents.
    ///
    /// # Errors
    /// A file that cannot be read, or whatever `build` returns.
    pub fn new<E: From<WatchError>>(
        paths: Vec<PathBuf>,
        what: &'static str,
        build: impl FnOnce(&Snapshot) -> Result<T, E>,
    ) -> Result<Self, E> {
        let files = Group::new(paths);
        let snapshot = files.snapshot()?;
        Ok(Self {
            current: ArcSwap::from_pointee(build(&snapshot)?),
            digest: ArcSwap::from_pointee(Some(snapshot.digest)),
            files,
            what,
        })
    }

    /// The value in force.
    #[must_use]
    pub fn current(&self) -> Arc<T> {
        self.current.load_full()
    }

    /// Rebuilds the value from the files' contents if they changed; keeps the old one when they
    /// cannot be read or `build` fails. Returns whether a new value is in force.
    pub fn reload_if_changed<E: Display>(
        &self,
        build: impl FnOnce(&Snapshot) -> Result<T, E>,
    ) -> bool {
        let snapshot = self.files.snapshot();
        let now = snapshot.as_ref().ok().map(|s| s.digest);
        if **self.digest.load() == now {
            return false;
        }
        self.digest.store(Arc::new(now));
        let rebuilt = match &snapshot {
            Ok(files) => build(files).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match rebuilt {
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
    use crate::mounted::{Snapshot, WatchError};

    #[test]
    fn a_kubelet_swap_rebuilds_once_and_the_same_content_never() {
        let mut volume = Volume::new("server-reload", &[("token", b"first")]);
        let path = volume.path("token");
        let builds = AtomicU32::new(0);
        let build = |files: &Snapshot| -> Result<String, WatchError> {
            builds.fetch_add(1, Ordering::SeqCst);
            Ok(String::from_utf8_lossy(files.file(0)).into_owned())
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
