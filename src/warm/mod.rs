//! Warm restart in the pod (docs/warm-restart.md): the guard that checks memcached's saved
//! metadata before it starts (`warm-guard`), the preStop hook that stops it so it saves them
//! (`warm-stop`), and what both read: memcached's memory layout and metadata file. The
//! `WarmRestart` condition the sync reports lives here too, next to the layout it compares.

pub mod condition;
pub mod guard;
pub mod layout;
pub mod meta;
pub mod stop;
