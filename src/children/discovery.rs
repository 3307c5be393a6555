//! The names clients find the cache by: the DNS SRV name of the port they use, and the host
//! names a TLS client that verifies the server certificate checks (docs/behaviour.md,
//! "Server discovery").

use super::ports::{MEMCACHED, MEMCACHED_TLS, Port};

/// The Service port behind `number` (the port `serverList` names).
#[must_use]
pub const fn client_port(number: i32) -> Port {
    if number == MEMCACHED_TLS.number {
        MEMCACHED_TLS
    } else {
        MEMCACHED
    }
}

/// A server as every list writes it: `<host>:<port>`.
#[must_use]
pub fn address(host: &str, port: i32) -> String {
    format!("{host}:{port}")
}

/// The Service's name as clients in any namespace resolve it: `<name>.<namespace>`.
#[must_use]
pub fn service_host(name: &str, namespace: &str) -> String {
    format!("{name}.{namespace}")
}

/// The proxy's Service (`spec.proxy`) is named after the Memcached with this suffix.
pub const PROXY_SUFFIX: &str = "-proxy";

/// The address of memcached's proxy in front of the Memcached `name` (`spec.proxy`): its Service
/// `<name>-proxy` as clients in any namespace resolve it, on the proxy's port.
#[must_use]
pub fn proxy_address(name: &str, namespace: &str) -> String {
    let service = format!("{name}{PROXY_SUFFIX}");
    address(&service_host(&service, namespace), MEMCACHED.number)
}

/// The host of the pod `ordinal` of the StatefulSet `workload` governed by the headless Service
/// `name`: `<workload>-<ordinal>.<name>.<namespace>.svc` (a zone's StatefulSet is
/// `<name>-<zone>`).
#[must_use]
pub fn workload_pod_host(workload: &str, name: &str, namespace: &str, ordinal: i32) -> String {
    format!("{workload}-{ordinal}.{name}.{namespace}.svc")
}

/// `_<port name>._tcp.<name>.<namespace>.svc`: the SRV records of a headless Service's named
/// port; one target per published pod.
#[must_use]
pub fn srv_name(name: &str, namespace: &str, port: &Port) -> String {
    format!("_{}._tcp.{name}.{namespace}.svc", port.name)
}

/// The host names in `serverList`, which the server certificate must cover for a client that
/// verifies them: every pod name in StatefulSet mode (`*.<name>.<namespace>.svc`: a wildcard
/// matches exactly one label), the Service name otherwise.
#[must_use]
pub fn tls_server_names(name: &str, namespace: &str, per_pod: bool) -> Vec<String> {
    if per_pod {
        vec![format!("*.{name}.{namespace}.svc")]
    } else {
        vec![
            format!("{name}.{namespace}"),
            format!("{name}.{namespace}.svc"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_srv_name_follows_the_client_port() {
        let plain = client_port(11211);
        assert_eq!(
            srv_name("cache", "shop", &plain),
            "_memcached._tcp.cache.shop.svc"
        );
        let tls = client_port(11212);
        assert_eq!(
            srv_name("cache", "shop", &tls),
            "_memcached-tls._tcp.cache.shop.svc"
        );
    }

    #[test]
    fn tls_names_cover_what_the_server_list_names() {
        let pods = tls_server_names("cache", "shop", true);
        assert_eq!(pods, ["*.cache.shop.svc"]);
        let first = super::super::servers::Members::Pods(1).addresses("cache", "shop", 11211);
        let host = first[0]
            .rsplit_once(':')
            .map(|(h, _)| h)
            .unwrap_or_default();
        // A wildcard stands for exactly the first label.
        let (_, rest) = host.split_once('.').unwrap_or_default();
        assert_eq!(pods[0].strip_prefix("*."), Some(rest));
        assert_eq!(
            tls_server_names("cache", "shop", false),
            ["cache.shop", "cache.shop.svc"]
        );
    }
}
