//! The sync response: desired children and the parent's status.
//!
//! Only fields Metacontroller documents are written (`children`, `status`, and
//! `resyncAfterSeconds` when the answer depends on time passing), so a CompositeController with
//! `responseUnMarshallMode: strict` accepts it. `finalized` is never written (a `true` in a sync
//! answer would remove a finalizer that the next sync re-adds).

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::value::RawValue;

use super::service_monitor::ServiceMonitor;
use crate::api::MemcachedStatus;

/// One desired child.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Child {
    /// The memcached Deployment.
    Deployment(Box<Deployment>),
    /// The memcached StatefulSet.
    StatefulSet(Box<StatefulSet>),
    /// The headless Service.
    Service(Box<Service>),
    /// The PodDisruptionBudget.
    PodDisruptionBudget(Box<PodDisruptionBudget>),
    /// The HorizontalPodAutoscaler.
    HorizontalPodAutoscaler(Box<HorizontalPodAutoscaler>),
    /// The Prometheus Operator ServiceMonitor.
    ServiceMonitor(Box<ServiceMonitor>),
    /// The NetworkPolicy.
    NetworkPolicy(Box<NetworkPolicy>),
    /// The server-list ConfigMap.
    ConfigMap(Box<ConfigMap>),
    /// The reload agent's ServiceAccount.
    ServiceAccount(Box<ServiceAccount>),
    /// The reload agent's RoleBinding.
    RoleBinding(Box<RoleBinding>),
    /// An observed child kept exactly as this hook last desired it (invalid spec).
    Kept(Box<RawValue>),
}

impl Child {
    /// The object's metadata; `None` for an observed child kept as it is.
    pub fn metadata_mut(&mut self) -> Option<&mut ObjectMeta> {
        Some(match self {
            Self::Deployment(o) => &mut o.metadata,
            Self::StatefulSet(o) => &mut o.metadata,
            Self::Service(o) => &mut o.metadata,
            Self::PodDisruptionBudget(o) => &mut o.metadata,
            Self::HorizontalPodAutoscaler(o) => &mut o.metadata,
            Self::ServiceMonitor(o) => &mut o.metadata,
            Self::NetworkPolicy(o) => &mut o.metadata,
            Self::ConfigMap(o) => &mut o.metadata,
            Self::ServiceAccount(o) => &mut o.metadata,
            Self::RoleBinding(o) => &mut o.metadata,
            Self::Kept(_) => return None,
        })
    }
}

/// The answer to a sync call.
#[derive(Debug, Serialize)]
pub struct SyncResponse {
    /// Every desired child; Metacontroller deletes observed children that are not listed.
    pub children: Vec<Child>,
    /// The parent's whole new status.
    pub status: MemcachedStatus,
    /// Sync this parent again after this many seconds, although nothing changes: a zone short
    /// now is lost then (`spec.zones.outageTimeoutSeconds`). A one-time request.
    #[serde(rename = "resyncAfterSeconds", skip_serializing_if = "Option::is_none")]
    pub resync_after_seconds: Option<f64>,
}
