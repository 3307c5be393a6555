//! `spec.discovery`: what the hook publishes, besides the status, for clients to find the
//! servers (docs/behaviour.md, "Server discovery").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether the server-list ConfigMap is written unless asked otherwise.
pub const DEFAULT_CONFIG_MAP: bool = false;

/// Server discovery for clients.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverySpec {
    /// The ConfigMap `<name>-servers`: the server list in the formats clients read as they are
    /// (a plain `host:port` list, oslo.cache, twemproxy, memcached's proxy). It changes only
    /// when the set of servers does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ServerListConfigMapSpec>,
}

/// The server-list ConfigMap.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerListConfigMapSpec {
    /// Write the ConfigMap `<name>-servers`. Needs a CompositeController that declares `v1`
    /// `configmaps`; without it there is no ConfigMap (condition `ChildResourcesMissing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_CONFIG_MAP))]
    pub enabled: Option<bool>,
}

/// `spec.discovery` with every default applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The server-list ConfigMap is written.
    pub config_map: bool,
}

impl Discovery {
    /// Resolves `spec.discovery`.
    #[must_use]
    pub fn of(spec: Option<&DiscoverySpec>) -> Self {
        Self {
            config_map: spec
                .and_then(|d| d.config_map.as_ref())
                .and_then(|c| c.enabled)
                .unwrap_or(DEFAULT_CONFIG_MAP),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_map_is_off_unless_enabled() {
        assert!(!Discovery::of(None).config_map);
        assert!(!Discovery::of(Some(&DiscoverySpec::default())).config_map);
        let on = DiscoverySpec {
            config_map: Some(ServerListConfigMapSpec {
                enabled: Some(true),
            }),
        };
        assert!(Discovery::of(Some(&on)).config_map);
    }
}
