//! Values built from files (credentials, TLS material) and rebuilt when the files change, as a
//! mounted Secret does on rotation. Readers take the current value from an `ArcSwap`, without a
//! lock; a rebuild that fails keeps the previous value in force.

use std::fmt::Display;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;

/// Modification time and length of each file (`None` when it cannot be read).
type Stamps = Vec<Option<(SystemTime, u64)>>;

fn stamps(paths: &[PathBuf]) -> Stamps {
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
        })
        .collect()
}

/// A value built from `paths`.
pub struct Reloading<T> {
    paths: Vec<PathBuf>,
    what: &'static str,
    current: ArcSwap<T>,
    stamps: ArcSwap<Stamps>,
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
        let stamps = stamps(&paths);
        Ok(Self {
            current: ArcSwap::from_pointee(build()?),
            stamps: ArcSwap::from_pointee(stamps),
            paths,
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
        let now = stamps(&self.paths);
        if **self.stamps.load() == now {
            return false;
        }
        self.stamps.store(Arc::new(now));
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
