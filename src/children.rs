//! Desired children: one pure builder per kind, from the effective spec to a typed object.
//!
//! Builders set only the fields the hook owns. They never set `namespace`, `ownerReferences`,
//! `status`, `resourceVersion` or the `controller-uid` label (Metacontroller adds what it needs),
//! and never an empty list or map.

pub mod accept;
mod affinity;
pub mod agent_access;
pub mod args;
pub mod auth_file;
pub mod deployment;
pub mod discovery;
pub mod exporter;
pub mod extstore;
pub mod hpa;
pub mod inherited;
pub mod labels;
pub mod memory;
pub mod network_policy;
pub mod own_image;
pub mod pdb;
pub mod pod;
pub mod ports;
pub mod proxy_config;
pub mod proxy_pods;
pub mod reload_agent;
mod resources;
pub mod running_layouts;
pub mod security_context;
pub mod servers;
pub mod service;
pub mod service_monitor;
pub mod statefulset;
mod volumes;
pub mod warm_restart;
pub mod zone;

/// Where the SASL Secret is mounted.
pub const SASL_MOUNT_PATH: &str = "/etc/memcached/sasl";
/// The SASL Secret's auth file (read by the init step and the reload agent, never by memcached).
pub const SASL_SECRET_FILE: &str = "/etc/memcached/sasl/password-file";
/// Where the in-memory volume with memcached's copy of the auth file is mounted.
pub const AUTH_COPY_MOUNT_PATH: &str = "/run/memcached/sasl";
/// memcached's `-Y` file: the normalised copy (`src/pod/auth_file.rs`).
pub const AUTH_COPY_FILE: &str = "/run/memcached/sasl/password-file";
/// Where the TLS Secret is mounted.
pub const TLS_MOUNT_PATH: &str = "/etc/memcached/tls";

/// A child kind: how the CompositeController names it and which spec field asks for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChildKind {
    /// `apps/v1` Deployment.
    #[default]
    Deployment,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `v1` Service.
    Service,
    /// `policy/v1` PodDisruptionBudget.
    PodDisruptionBudget,
    /// `autoscaling/v2` HorizontalPodAutoscaler.
    HorizontalPodAutoscaler,
    /// `monitoring.coreos.com/v1` ServiceMonitor.
    ServiceMonitor,
    /// `networking.k8s.io/v1` NetworkPolicy.
    NetworkPolicy,
    /// `v1` ConfigMap: the server list for clients, and the proxy's route configuration.
    ConfigMap,
    /// `v1` ServiceAccount: the reload agent's, when it writes its outcome on its Pod.
    ServiceAccount,
    /// `rbac.authorization.k8s.io/v1` RoleBinding: the reload agent's grant on its Pod.
    RoleBinding,
}

/// A kind's `(apiVersion, kind, group, plural)`, from its k8s-openapi type.
fn names<R: k8s_openapi::Resource>() -> (&'static str, &'static str, &'static str, &'static str) {
    (R::API_VERSION, R::KIND, R::GROUP, R::URL_PATH_SEGMENT)
}

impl ChildKind {
    /// Every kind, in the order children are emitted.
    pub const ALL: [Self; 10] = [
        Self::Deployment,
        Self::StatefulSet,
        Self::Service,
        Self::PodDisruptionBudget,
        Self::HorizontalPodAutoscaler,
        Self::ServiceMonitor,
        Self::NetworkPolicy,
        Self::ConfigMap,
        Self::ServiceAccount,
        Self::RoleBinding,
    ];

    fn names(self) -> (&'static str, &'static str, &'static str, &'static str) {
        use k8s_openapi::api::{apps, autoscaling, core, networking, policy, rbac};
        match self {
            Self::Deployment => names::<apps::v1::Deployment>(),
            Self::StatefulSet => names::<apps::v1::StatefulSet>(),
            Self::Service => names::<core::v1::Service>(),
            Self::PodDisruptionBudget => names::<policy::v1::PodDisruptionBudget>(),
            Self::HorizontalPodAutoscaler => names::<autoscaling::v2::HorizontalPodAutoscaler>(),
            Self::ServiceMonitor => names::<crate::hook::service_monitor::ServiceMonitor>(),
            Self::NetworkPolicy => names::<networking::v1::NetworkPolicy>(),
            Self::ConfigMap => names::<core::v1::ConfigMap>(),
            Self::ServiceAccount => names::<core::v1::ServiceAccount>(),
            Self::RoleBinding => names::<rbac::v1::RoleBinding>(),
        }
    }

    /// `apiVersion` as written in `childResources`.
    #[must_use]
    pub fn api_version(self) -> &'static str {
        self.names().0
    }

    /// The kind's `kind`.
    #[must_use]
    pub fn kind(self) -> &'static str {
        self.names().1
    }

    /// Plural resource name as written in `childResources`.
    #[must_use]
    pub fn resource(self) -> &'static str {
        self.names().3
    }

    /// `<resource>.<group>` (just `<resource>` for the core group).
    #[must_use]
    pub fn qualified_resource(self) -> String {
        let (_, _, group, resource) = self.names();
        if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        }
    }

    /// The spec field that asks for this kind.
    #[must_use]
    pub fn needed_by(self) -> &'static str {
        match self {
            Self::Deployment | Self::Service => "spec",
            Self::StatefulSet => "spec.workload",
            Self::PodDisruptionBudget => "spec.highAvailability.podDisruptionBudget.enabled",
            Self::HorizontalPodAutoscaler => "spec.autoscaling.enabled",
            Self::ServiceMonitor => "spec.monitoring.serviceMonitor",
            Self::NetworkPolicy => "spec.security.networkPolicy.enabled",
            Self::ConfigMap => "spec.discovery.configMap.enabled",
            Self::ServiceAccount | Self::RoleBinding => {
                "spec.security.secretRotation Reload with the hook's --relate-pods"
            }
        }
    }
}
