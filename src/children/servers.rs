//! The ConfigMap `<name>-servers`: the server list in the formats clients read as they are
//! (docs/behaviour.md, "Server discovery").
//!
//! It is built only from the spec and the workload's membership (which pods exist by name, or
//! the Service), never from addresses, readiness or time, and in a fixed order: the same
//! membership gives the same bytes, so a pod restart or a rolling update rewrites nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::Ipv6Addr;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{discovery, labels};

/// The ConfigMap's name is the parent's with this suffix.
pub const SUFFIX: &str = "-servers";
/// Key: `host:port` entries separated by commas; with zones also `servers.<zone>`, that zone's
/// pods.
pub const PLAIN: &str = "servers";
/// Key: the value of oslo.cache's `[cache] memcache_servers`.
pub const OSLO_CACHE: &str = "oslo-cache-memcache-servers";
/// Key: twemproxy's `servers:` block (absent with TLS: twemproxy speaks no TLS to servers).
pub const TWEMPROXY: &str = "twemproxy-servers.yaml";
/// Key: a `pools{}` block for memcached's built-in proxy (its route library).
pub const PROXY_POOLS: &str = "memcached-proxy-pools.lua";
/// Key: the DNS SRV name of the port the lists name (as `status.srvName`).
pub const SRV_NAME: &str = "srv-name";
/// Key (with `spec.proxy`): the address of memcached's proxy in front of the cache,
/// `<name>-proxy.<namespace>:11211` (as `status.proxy.address`).
pub const PROXY: &str = "proxy";
/// Key (with TLS): the names a TLS client verifies the certificate against, comma-separated
/// (as `status.tlsServerNames`).
pub const TLS_SERVER_NAMES: &str = "tls-server-names";

/// Who the server lists name: the one membership that the ConfigMap and `status.serverList`
/// both read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Members<'a> {
    /// The headless Service, by its name: Deployment pods have no stable names. The ConfigMap
    /// names it always, `status.serverList` as [`Shown`] says.
    Service(Shown),
    /// The StatefulSet's pods `<name>-0` to `<name>-<n-1>`, by their stable names, in ordinal
    /// order.
    Pods(i32),
    /// The pods a StatefulSet will have before it exists: the ConfigMap names them already
    /// (their names are known), `status.serverList` names none yet.
    Planned(i32),
    /// With `spec.zones` and StatefulSets: each zone's pods `<name>-<zone>-0` to
    /// `<name>-<zone>-<n-1>`, zone by zone in the order given, each zone in ordinal order.
    /// `status.serverList` names the pods each zone's StatefulSet has (`status.zones[]`).
    Zones(&'a [&'a str], i32),
}

impl Default for Members<'_> {
    fn default() -> Self {
        Self::Service(Shown::WhenReady)
    }
}

impl Members<'_> {
    /// The lists name pods, each by its own name (and TLS clients verify per-pod names).
    #[must_use]
    pub fn per_pod(self) -> bool {
        !matches!(self, Self::Service(_))
    }
}

/// When `status.serverList` names the Service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// While the Ready condition is True (Deployment mode).
    WhenReady,
    /// While any pod is ready (a switch from a Deployment: the Service selects the leaving and
    /// the new pods alike).
    WhileServing,
}

/// What the ConfigMap is built from.
#[derive(Clone, Copy, Debug)]
pub struct Servers<'a> {
    /// The parent's name.
    pub name: &'a str,
    /// The parent's namespace.
    pub namespace: &'a str,
    /// Who the list names.
    pub members: Members<'a>,
    /// The port clients connect to.
    pub port: i32,
    /// TLS is on: the port speaks TLS.
    pub tls: bool,
    /// `spec.proxy` is on: the proxy's address is listed too.
    pub proxy: bool,
}

/// One listed server: the host to connect to and a name for it that outlives its address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    /// The host clients connect to.
    pub host: String,
    /// The server's stable name (the pod's, or the Service's).
    pub label: String,
}

impl Members<'_> {
    /// The servers the lists name, in list order, of the Memcached `name` in `namespace`: the
    /// one enumeration that the ConfigMap and `status.serverList` both read.
    #[must_use]
    pub fn servers(self, name: &str, namespace: &str) -> Vec<Server> {
        match self {
            Self::Service(_) => vec![Server {
                host: discovery::service_host(name, namespace),
                label: name.to_owned(),
            }],
            Self::Pods(n) | Self::Planned(n) => pods(name, name, namespace, n).collect(),
            Self::Zones(zones, n) => zones
                .iter()
                .flat_map(|zone| {
                    let workload = zone_workload(name, zone);
                    pods(&workload, name, namespace, n).collect::<Vec<_>>()
                })
                .collect(),
        }
    }

    /// [`Members::servers`] as `host:port` on `port`.
    #[must_use]
    pub fn addresses(self, name: &str, namespace: &str, port: i32) -> Vec<String> {
        let servers = self.servers(name, namespace);
        servers
            .iter()
            .map(|s| discovery::address(&s.host, port))
            .collect()
    }
}

/// The workload `<name>-<zone>` of `zone`.
fn zone_workload(name: &str, zone: &str) -> String {
    crate::api::zones::child_name(name, zone)
}

/// The pods `<workload>-0` to `<workload>-<n-1>` of the StatefulSet `workload` governed by the
/// headless Service `name` in `namespace`, in ordinal order.
pub fn pods<'a>(
    workload: &'a str,
    name: &'a str,
    namespace: &'a str,
    n: i32,
) -> impl Iterator<Item = Server> + 'a {
    (0..n).map(move |i| Server {
        host: discovery::workload_pod_host(workload, name, namespace, i),
        label: format!("{workload}-{i}"),
    })
}

/// [`pods`] as `host:port` on `port`: a zone's `status.zones[].serverList`.
#[must_use]
pub fn pod_addresses(
    workload: &str,
    name: &str,
    namespace: &str,
    n: i32,
    port: i32,
) -> Vec<String> {
    pods(workload, name, namespace, n)
        .map(|s| discovery::address(&s.host, port))
        .collect()
}

/// `host:port`, comma-separated.
fn plain(entries: &[Server], port: i32) -> String {
    let list: Vec<String> = entries
        .iter()
        .map(|e| discovery::address(&e.host, port))
        .collect();
    list.join(",")
}

/// oslo.cache's form: `host:port`, except an IPv6 literal, which python-memcached reads only as
/// `inet6:[addr]:port`. The hook lists names, so the `inet6:` form stays for literals.
fn oslo_cache(entries: &[Server], port: i32) -> String {
    let list: Vec<String> = entries
        .iter()
        .map(|e| match e.host.parse::<Ipv6Addr>() {
            Ok(_) => format!("inet6:[{}]:{port}", e.host),
            Err(_) => discovery::address(&e.host, port),
        })
        .collect();
    list.join(",")
}

/// twemproxy's `servers:` block: `host:port:weight name`, weight 1, the name stable (twemproxy's
/// ketama hashes the name when there is one, so a new address moves no key).
fn twemproxy(entries: &[Server], port: i32) -> String {
    if entries.is_empty() {
        return "servers: []\n".to_owned();
    }
    let mut out = "servers:\n".to_owned();
    for e in entries {
        let _ = writeln!(out, "  - {}:{port}:1 {}", e.host, e.label);
    }
    out
}

/// A `pools{}` block of one pool named after the Memcached, backends in list (ordinal) order:
/// the proxy hashes keys over that order. With TLS the pool's backends connect with TLS.
fn proxy_pools(name: &str, entries: &[Server], port: i32, tls: bool) -> String {
    let mut out = format!("pools{{\n    [\"{name}\"] = {{\n");
    if tls {
        out.push_str("        backend_options = { tls = true },\n");
    }
    out.push_str("        backends = {\n");
    for e in entries {
        let _ = writeln!(out, "            \"{}:{port}\",", e.host);
    }
    out.push_str("        },\n    },\n}\n");
    out
}

/// The desired ConfigMap `<name>-servers` of `s`.
#[must_use]
pub fn build(s: &Servers<'_>) -> ConfigMap {
    let entries = s.members.servers(s.name, s.namespace);
    let (name, namespace, port) = (s.name, s.namespace, s.port);
    let srv = discovery::srv_name(name, namespace, &discovery::client_port(port));
    let mut data = BTreeMap::from([
        (PLAIN.to_owned(), plain(&entries, port)),
        (OSLO_CACHE.to_owned(), oslo_cache(&entries, port)),
        (
            PROXY_POOLS.to_owned(),
            proxy_pools(name, &entries, port, s.tls),
        ),
        (SRV_NAME.to_owned(), srv),
    ]);
    if let Members::Zones(zones, n) = s.members {
        for zone in zones {
            let workload = zone_workload(name, zone);
            let servers: Vec<Server> = pods(&workload, name, namespace, n).collect();
            data.insert(format!("{PLAIN}.{zone}"), plain(&servers, port));
        }
    }
    if s.proxy {
        data.insert(PROXY.to_owned(), discovery::proxy_address(name, namespace));
    }
    if s.tls {
        let names = discovery::tls_server_names(name, namespace, s.members.per_pod());
        data.insert(TLS_SERVER_NAMES.to_owned(), names.join(","));
    } else {
        data.insert(TWEMPROXY.to_owned(), twemproxy(&entries, port));
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{name}{SUFFIX}")),
            labels: Some(labels::base(name)),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    }
}

pub mod size;

#[cfg(test)]
mod tests;
