//! Desired children: one pure builder per kind, from the effective spec to a typed object.
//!
//! Builders set only the fields the hook owns. They never set `namespace`, `ownerReferences`,
//! `status`, `resourceVersion` or the `controller-uid` label (Metacontroller adds what it needs),
//! and never an empty list or map.

pub mod args;
pub mod deployment;
pub mod hpa;
pub mod labels;
pub mod network_policy;
pub mod pdb;
pub mod ports;
pub mod service;
pub mod service_monitor;

/// Where the SASL Secret is mounted.
pub const SASL_MOUNT_PATH: &str = "/etc/memcached/sasl";
/// Where the TLS Secret is mounted.
pub const TLS_MOUNT_PATH: &str = "/etc/memcached/tls";

/// A child kind: how the CompositeController names it and which spec field asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChildKind {
    /// `apps/v1` Deployment.
    Deployment,
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
}

impl ChildKind {
    /// `apiVersion` as written in `childResources`.
    #[must_use]
    pub fn api_version(self) -> &'static str {
        match self {
            Self::Deployment => "apps/v1",
            Self::Service => "v1",
            Self::PodDisruptionBudget => "policy/v1",
            Self::HorizontalPodAutoscaler => "autoscaling/v2",
            Self::ServiceMonitor => "monitoring.coreos.com/v1",
            Self::NetworkPolicy => "networking.k8s.io/v1",
        }
    }

    /// Plural resource name as written in `childResources`.
    #[must_use]
    pub fn resource(self) -> &'static str {
        match self {
            Self::Deployment => "deployments",
            Self::Service => "services",
            Self::PodDisruptionBudget => "poddisruptionbudgets",
            Self::HorizontalPodAutoscaler => "horizontalpodautoscalers",
            Self::ServiceMonitor => "servicemonitors",
            Self::NetworkPolicy => "networkpolicies",
        }
    }

    /// `<resource>.<group>` (just `<resource>` for the core group).
    #[must_use]
    pub fn qualified_resource(self) -> String {
        match self.api_version().split_once('/') {
            Some((group, _)) => format!("{}.{group}", self.resource()),
            None => self.resource().to_owned(),
        }
    }

    /// Every kind, in the order children are emitted.
    pub const ALL: [Self; 6] = [
        Self::Deployment,
        Self::Service,
        Self::PodDisruptionBudget,
        Self::HorizontalPodAutoscaler,
        Self::ServiceMonitor,
        Self::NetworkPolicy,
    ];

    /// The kind's `kind`.
    #[must_use]
    pub fn kind(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::Service => "Service",
            Self::PodDisruptionBudget => "PodDisruptionBudget",
            Self::HorizontalPodAutoscaler => "HorizontalPodAutoscaler",
            Self::ServiceMonitor => "ServiceMonitor",
            Self::NetworkPolicy => "NetworkPolicy",
        }
    }

    /// The spec field that asks for this kind.
    #[must_use]
    pub fn needed_by(self) -> &'static str {
        match self {
            Self::Deployment | Self::Service => "spec",
            Self::PodDisruptionBudget => "spec.highAvailability.podDisruptionBudget.enabled",
            Self::HorizontalPodAutoscaler => "spec.autoscaling.enabled",
            Self::ServiceMonitor => "spec.monitoring.serviceMonitor",
            Self::NetworkPolicy => "spec.security.networkPolicy.enabled",
        }
    }
}
