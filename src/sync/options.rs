//! How the hook itself is configured (its flags), beyond what a sync request carries.

use std::borrow::Cow;

use crate::api::effective::{Effective, ImageDefaults};

/// How the hook itself is configured, beyond what a request carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Image of the reload-agent sidecar (`--reload-agent-image`): the hook's own image.
    pub reload_agent_image: Cow<'static, str>,
    /// memcached image of a Memcached without `spec.image` (`--default-image`).
    pub default_image: Cow<'static, str>,
    /// Exporter image of a Memcached without `spec.monitoring.exporterImage`
    /// (`--default-exporter-image`).
    pub default_exporter_image: Cow<'static, str>,
    /// Whether `/customize` asks for the pods of a Memcached with `warmRestart` or Secrets
    /// reloaded in place, and the reload agent writes its outcome on its Pod (`--relate-pods`):
    /// Metacontroller then watches every pod of the cluster.
    pub relate_pods: bool,
    /// Whether every workload adopts this hook's rendering of its pod template at once
    /// (`--adopt-new-rendering`), instead of keeping the one it runs until its owner's intent
    /// changes (`src/workload/intent.rs`).
    pub adopt_new_rendering: bool,
}

impl Options {
    /// The images of a Memcached whose spec names none.
    #[must_use]
    pub fn image_defaults(&self) -> ImageDefaults<'_> {
        ImageDefaults {
            memcached: &self.default_image,
            exporter: &self.default_exporter_image,
        }
    }

    /// Whether the reload agent of `e`'s pods writes its outcome on its Pod (and `/customize`
    /// relates the pods for it): with `--relate-pods` and Secrets reloaded in place.
    pub(super) fn agent_reports(&self, e: &Effective<'_>) -> bool {
        self.relate_pods && e.security.reloads()
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            reload_agent_image: Cow::Borrowed(crate::children::own_image::DEFAULT_IMAGE),
            default_image: Cow::Borrowed(crate::api::DEFAULT_IMAGE),
            default_exporter_image: Cow::Borrowed(crate::api::monitoring::DEFAULT_EXPORTER_IMAGE),
            relate_pods: false,
            adopt_new_rendering: false,
        }
    }
}
