//! `spec.memcached.hardening`: memcached commands that anyone who reaches the port could use
//! against every other client of the cache (docs/behaviour.md, "A hardened memcached").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether `flush_all` is refused unless asked otherwise: applications call it (a framework's
/// "clear the cache"), so it stays allowed.
pub const DEFAULT_DISABLE_FLUSH_ALL: bool = false;
/// Whether `stats cachedump` and `lru_crawler metadump` are refused unless asked otherwise.
pub const DEFAULT_DISABLE_DUMPING: bool = true;
/// Whether `watch` is refused unless asked otherwise.
pub const DEFAULT_DISABLE_WATCH: bool = true;

/// Commands memcached refuses.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HardeningSpec {
    /// Refuse `flush_all` (`-F`), which empties the whole cache for every client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_DISABLE_FLUSH_ALL))]
    pub disable_flush_all: Option<bool>,
    /// Refuse `stats cachedump` and `lru_crawler metadump` (`-X`), which list the keys of every
    /// client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_DISABLE_DUMPING))]
    pub disable_dumping: Option<bool>,
    /// Refuse `watch` (`-W`), which streams the keys of every client's requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_DISABLE_WATCH))]
    pub disable_watch: Option<bool>,
}

/// The hardening with every default applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hardening {
    /// `-F`.
    pub disable_flush_all: bool,
    /// `-X`.
    pub disable_dumping: bool,
    /// `-W`.
    pub disable_watch: bool,
}

impl Hardening {
    /// Resolves the defaults of `spec.memcached.hardening`.
    #[must_use]
    pub fn of(spec: Option<&HardeningSpec>) -> Self {
        let set = |pick: fn(&HardeningSpec) -> Option<bool>, default| {
            spec.and_then(pick).unwrap_or(default)
        };
        Self {
            disable_flush_all: set(|h| h.disable_flush_all, DEFAULT_DISABLE_FLUSH_ALL),
            disable_dumping: set(|h| h.disable_dumping, DEFAULT_DISABLE_DUMPING),
            disable_watch: set(|h| h.disable_watch, DEFAULT_DISABLE_WATCH),
        }
    }

    /// memcached's flags for the refused commands, in a fixed order.
    pub fn flags(self) -> impl Iterator<Item = &'static str> {
        [
            (self.disable_flush_all, "-F"),
            (self.disable_dumping, "-X"),
            (self.disable_watch, "-W"),
        ]
        .into_iter()
        .filter_map(|(on, flag)| on.then_some(flag))
    }
}

impl Default for Hardening {
    fn default() -> Self {
        Self::of(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(spec: Option<&HardeningSpec>) -> Vec<&'static str> {
        Hardening::of(spec).flags().collect()
    }

    #[test]
    fn dumping_and_watch_are_refused_by_default() {
        assert_eq!(flags(None), ["-X", "-W"]);
        assert_eq!(flags(Some(&HardeningSpec::default())), ["-X", "-W"]);
    }

    #[test]
    fn each_flag_follows_its_field() {
        let all = HardeningSpec {
            disable_flush_all: Some(true),
            disable_dumping: Some(true),
            disable_watch: Some(true),
        };
        assert_eq!(flags(Some(&all)), ["-F", "-X", "-W"]);
        let none = HardeningSpec {
            disable_flush_all: Some(false),
            disable_dumping: Some(false),
            disable_watch: Some(false),
        };
        assert!(flags(Some(&none)).is_empty());
        let watch_only = HardeningSpec {
            disable_dumping: Some(false),
            ..HardeningSpec::default()
        };
        assert_eq!(flags(Some(&watch_only)), ["-W"]);
    }
}
