//! Warm restart in the pod (docs/warm-restart.md): the guard that checks memcached's saved
//! metadata before it starts (`warm-guard`), the preStop hook that stops it so it saves them
//! (`warm-stop`), and the metadata file the guard reads. memcached's memory layout, which the
//! guard and the `WarmRestart` condition (`src/status/warm_restart.rs`) both compare, is read
//! from its command line in `src/children/memory.rs`, next to the builder of that command line.

pub mod guard;
pub mod meta;
pub mod stop;
