//! The ports a memcached pod serves, derived once from the effective spec and used by the
//! containers, the Service, the NetworkPolicy and the status; and the sidecars' own ports, which
//! their programs (`src/pod/reload_agent/`, `src/pod/exporter/`) listen on by default.

use k8s_openapi::api::core::v1::ContainerPort;

use crate::api::effective::Effective;

/// The container that serves a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    /// The memcached container.
    Memcached,
    /// The Prometheus exporter sidecar.
    Exporter,
    /// The reload-agent sidecar.
    ReloadAgent,
}

/// One served TCP port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    /// Port name (container, Service and ServiceMonitor).
    pub name: &'static str,
    /// Port number.
    pub number: i32,
    /// Which container listens on it.
    pub server: Server,
}

/// The main memcached listener: TLS when TLS is on without `allowPlaintext` (what the reference
/// operator's TLS clients use), plaintext otherwise. Probes connect to it (a TCP connect works
/// on a TLS listener too).
pub const MEMCACHED: Port = Port {
    name: "memcached",
    number: 11211,
    server: Server::Memcached,
};
/// The TLS memcached listener, when TLS is enabled.
pub const MEMCACHED_TLS: Port = Port {
    name: "memcached-tls",
    number: 11212,
    server: Server::Memcached,
};
/// The stats exporter's `/metrics` port (`memcached-hook stats-exporter --listen-addr`).
pub const EXPORTER_PORT: u16 = 9150;
/// The reload agent's `/metrics` and `/healthz` port (`memcached-hook reload-agent
/// --metrics-addr`).
pub const RELOAD_AGENT_PORT: u16 = 9151;

/// The exporter's metrics endpoint, when monitoring is enabled.
pub const METRICS: Port = Port {
    name: "metrics",
    number: EXPORTER_PORT as i32,
    server: Server::Exporter,
};
/// The reload agent's metrics endpoint: a port of its container only, not of the Service.
pub const RELOAD_METRICS: Port = Port {
    name: "reload-metrics",
    number: RELOAD_AGENT_PORT as i32,
    server: Server::ReloadAgent,
};

/// memcached's plaintext listener on the pod's loopback (`127.0.0.1` only) when TLS is on without
/// `allowPlaintext`: for the exporter and the reload agent. It cannot share 11211 with the
/// wildcard TLS listener (memcached then binds the wildcard for IPv6 only), and is not a
/// container port: nothing outside the pod can reach it.
pub const LOOPBACK_PLAINTEXT: i32 = 11213;

/// Whether every memcached port reachable from outside the pod speaks TLS.
#[must_use]
pub fn tls_only(e: &Effective<'_>) -> bool {
    e.security.tls.is_some_and(|t| !t.allow_plaintext)
}

/// The plaintext port processes inside the pod use (on 127.0.0.1).
#[must_use]
pub fn in_pod_plaintext(e: &Effective<'_>) -> i32 {
    if tls_only(e) {
        LOOPBACK_PLAINTEXT
    } else {
        MEMCACHED.number
    }
}

/// The port `status.serverList` names: the TLS port clients must use when TLS is on.
#[must_use]
pub fn for_clients(e: &Effective<'_>) -> i32 {
    match e.security.tls {
        Some(t) if t.allow_plaintext => MEMCACHED_TLS.number,
        _ => MEMCACHED.number,
    }
}

/// Every port the pods of `e` serve, in the order children list them.
#[must_use]
pub fn served(e: &Effective<'_>) -> Vec<Port> {
    let tls = e.security.tls.map(|_| MEMCACHED_TLS);
    let metrics = e.monitoring.as_ref().map(|_| METRICS);
    [Some(MEMCACHED), tls, metrics]
        .into_iter()
        .flatten()
        .collect()
}

/// The ports of `served` that `listener` listens on, as its container declares them.
#[must_use]
pub fn container_ports(served: &[Port], listener: Server) -> Vec<ContainerPort> {
    served
        .iter()
        .filter(|p| p.server == listener)
        .map(|p| ContainerPort {
            name: Some(p.name.to_owned()),
            container_port: p.number,
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        })
        .collect()
}
