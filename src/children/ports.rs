//! The ports a memcached pod serves, derived once from the effective spec and used by the
//! containers, the Service, the NetworkPolicy and the status.

use crate::api::effective::Effective;

/// The container that serves a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    /// The memcached container.
    Memcached,
    /// The Prometheus exporter sidecar.
    Exporter,
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

/// The plaintext memcached listener (also what probes and the exporter use).
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
/// The exporter's metrics endpoint, when monitoring is enabled.
pub const METRICS: Port = Port {
    name: "metrics",
    number: 9150,
    server: Server::Exporter,
};

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
