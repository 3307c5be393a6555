//! The part of an observed workload's pods the hook reads: memcached's arguments (the memory
//! layout a warm restart keeps) and the StatefulSet's volume claim templates (which cannot
//! change in place). Everything else of the pod template is skipped.

use serde::Deserialize;

/// `spec.template` of an observed workload.
#[derive(Debug, Default, Deserialize)]
pub struct ObservedTemplate {
    /// The pod spec.
    #[serde(default)]
    pub spec: Option<ObservedPodSpec>,
}

/// The containers of an observed pod template, and the ServiceAccount its pods run as.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservedPodSpec {
    /// Name and arguments of each container.
    #[serde(default)]
    pub containers: Vec<ObservedContainer>,
    /// `serviceAccountName` (the reload agent's, while it reports).
    #[serde(default)]
    pub service_account_name: Option<String>,
}

/// A container's name and arguments.
#[derive(Debug, Default, Deserialize)]
pub struct ObservedContainer {
    /// Container name.
    pub name: String,
    /// Its `args`.
    #[serde(default)]
    pub args: Option<Vec<String>>,
}

/// A volume claim template of an observed StatefulSet: what the hook sets in it.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
pub struct ObservedClaim {
    /// Its name.
    #[serde(default)]
    pub metadata: ClaimMeta,
    /// Class and size.
    #[serde(default)]
    pub spec: ClaimSpec,
}

/// A claim template's name.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
pub struct ClaimMeta {
    /// The claim template's name.
    #[serde(default)]
    pub name: Option<String>,
}

/// A claim template's class and requested size.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClaimSpec {
    /// `storageClassName`.
    #[serde(default)]
    pub storage_class_name: Option<String>,
    /// `resources.requests.storage`.
    #[serde(default)]
    pub resources: ClaimResources,
}

/// A claim template's requests.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
pub struct ClaimResources {
    /// `requests`.
    #[serde(default)]
    pub requests: ClaimRequests,
}

/// A claim template's requested storage.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
pub struct ClaimRequests {
    /// `storage`, as stored.
    #[serde(default)]
    pub storage: Option<String>,
}

impl ObservedTemplate {
    /// The arguments of the container named `name`.
    #[must_use]
    pub fn args_of(&self, name: &str) -> Option<&[String]> {
        self.spec
            .as_ref()?
            .containers
            .iter()
            .find(|c| c.name == name)?
            .args
            .as_deref()
    }
}
