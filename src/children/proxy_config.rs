//! The ConfigMap `<name>-proxy`: the route configuration memcached's proxy loads through its
//! route library (`-o proxy_config=routelib,proxy_arg=<file>`), docs/behaviour.md, "Proxy".
//!
//! Its backends are the one membership the server lists read ([`Members`]): with zones a pool
//! per zone, reads from the proxy's own zone first and from the other zones on a miss or an
//! error, every other command to every zone; without zones one pool, keys hashed over the pods
//! in ordinal order. Like the server lists it depends on membership only, so a restart or a
//! rolling update of the cache rewrites nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::servers::{Members, Server};
use super::{discovery, labels};

/// The ConfigMap's name is the parent's with this suffix (as the proxy's Service, whose name
/// clients find the proxy by: [`discovery::PROXY_SUFFIX`]).
pub const SUFFIX: &str = discovery::PROXY_SUFFIX;
/// The ConfigMap's key holding the route configuration.
pub const ROUTES_KEY: &str = "routes.lua";
/// The environment variable naming the proxy's own zone (set from the zone its pod is pinned
/// to); the configuration reads it with zones.
pub const ZONE_ENV: &str = "MEMCACHED_PROXY_ZONE";
/// The pool set of the zones (the route library names a pool set `set_<word>`).
const ZONE_SET: &str = "set_zones";
/// The one pool without zones.
const POOL: &str = "cache";
/// The commands that read: served by the local zone first, by the other zones on a miss or an
/// error. `gat` and `gats` also touch the item, in the zone that answers.
const READS: [&str; 5] = ["get", "gets", "gat", "gats", "mg"];

/// Seconds the proxy waits for a connection to a backend.
pub const CONNECT_TIMEOUT_SECONDS: u32 = 1;
/// Seconds the proxy waits for a backend's answer before counting it failed: a read then goes
/// to the other zones.
pub const READ_TIMEOUT_SECONDS: u32 = 1;
/// Seconds the proxy waits before connecting again to a backend marked down.
pub const RETRY_SECONDS: u32 = 1;
/// Consecutive failures after which a backend is marked down (answers fail at once).
pub const FAILURE_LIMIT: u32 = 3;

/// What the route configuration is built from.
#[derive(Clone, Copy, Debug)]
pub struct Routes<'a> {
    /// The parent's name.
    pub name: &'a str,
    /// The parent's namespace.
    pub namespace: &'a str,
    /// Who the cache's pods are: the server lists' membership.
    pub members: Members<'a>,
    /// The cache's port the proxy connects to.
    pub port: i32,
}

/// The route configuration of `r`, as the proxy's route library reads it.
#[must_use]
pub fn render(r: &Routes<'_>) -> String {
    let mut out = format!(
        "-- Routes of memcached's proxy in front of the Memcached {name}, written by \
         memcached-hook.\nsettings{{\n    backend_connect_timeout = {CONNECT_TIMEOUT_SECONDS},\n    \
         backend_read_timeout = {READ_TIMEOUT_SECONDS},\n    backend_retry_waittime = \
         {RETRY_SECONDS},\n    backend_failure_limit = {FAILURE_LIMIT},\n}}\n",
        name = r.name
    );
    match r.members {
        Members::Zones(zones, n) => {
            let _ = writeln!(out, "local_zone_from_env(\"{ZONE_ENV}\")");
            let _ = writeln!(out, "pools{{\n    {ZONE_SET} = {{");
            for zone in zones {
                let workload = crate::api::zones::child_name(r.name, zone);
                let servers: Vec<Server> =
                    super::servers::pods(&workload, r.name, r.namespace, n).collect();
                let _ = write!(out, "        [\"{zone}\"] = ");
                backends(&mut out, &servers, r.port, "        ");
            }
            out.push_str("    },\n}\nroutes{\n    cmap = {\n");
            for read in READS {
                let _ = writeln!(
                    out,
                    "        {read} = route_zfailover{{ children = \"{ZONE_SET}\" }},"
                );
            }
            let _ = writeln!(
                out,
                "    }},\n    default = route_allsync{{ children = \"{ZONE_SET}\" }},\n}}"
            );
        }
        members => {
            let servers = members.servers(r.name, r.namespace);
            let _ = write!(out, "pools{{\n    {POOL} = ");
            backends(&mut out, &servers, r.port, "    ");
            let _ = writeln!(
                out,
                "}}\nroutes{{\n    default = route_direct{{ child = \"{POOL}\" }},\n}}"
            );
        }
    }
    out
}

/// A pool of `servers` on `port`, in list order: the proxy hashes keys over that order.
fn backends(out: &mut String, servers: &[Server], port: i32, indent: &str) {
    out.push_str("{ backends = {\n");
    for s in servers {
        let _ = writeln!(
            out,
            "{indent}    \"{}\",",
            discovery::address(&s.host, port)
        );
    }
    let _ = writeln!(out, "{indent}}} }},");
}

/// The desired ConfigMap `<name>-proxy` of `r`.
#[must_use]
pub fn build(r: &Routes<'_>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{}{SUFFIX}", r.name)),
            labels: Some(labels::base(r.name)),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(ROUTES_KEY.to_owned(), render(r))])),
        ..ConfigMap::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(members: Members<'_>) -> String {
        render(&Routes {
            name: "cache",
            namespace: "shop",
            members,
            port: 11211,
        })
    }

    #[test]
    fn with_zones_a_pool_per_zone_reads_fail_over_and_writes_reach_every_zone() {
        let text = routes(Members::Zones(&["a", "b"], 2));
        let expected = "\
local_zone_from_env(\"MEMCACHED_PROXY_ZONE\")
pools{
    set_zones = {
        [\"a\"] = { backends = {
            \"cache-a-0.cache.shop.svc:11211\",
            \"cache-a-1.cache.shop.svc:11211\",
        } },
        [\"b\"] = { backends = {
            \"cache-b-0.cache.shop.svc:11211\",
            \"cache-b-1.cache.shop.svc:11211\",
        } },
    },
}
routes{
    cmap = {
        get = route_zfailover{ children = \"set_zones\" },
        gets = route_zfailover{ children = \"set_zones\" },
        gat = route_zfailover{ children = \"set_zones\" },
        gats = route_zfailover{ children = \"set_zones\" },
        mg = route_zfailover{ children = \"set_zones\" },
    },
    default = route_allsync{ children = \"set_zones\" },
}
";
        assert!(text.ends_with(expected), "{text}");
        assert!(text.contains("backend_read_timeout = 1,"), "{text}");
    }

    #[test]
    fn without_zones_one_pool_hashes_over_the_pods_in_ordinal_order() {
        let text = routes(Members::Pods(3));
        let expected = "\
pools{
    cache = { backends = {
        \"cache-0.cache.shop.svc:11211\",
        \"cache-1.cache.shop.svc:11211\",
        \"cache-2.cache.shop.svc:11211\",
    } },
}
routes{
    default = route_direct{ child = \"cache\" },
}
";
        assert!(text.ends_with(expected), "{text}");
        assert!(!text.contains(ZONE_ENV), "{text}");
    }

    #[test]
    fn a_single_deployment_pod_is_reached_by_the_service_name() {
        let text = routes(Members::default());
        assert!(text.contains("\"cache.shop:11211\","), "{text}");
    }

    #[test]
    fn the_same_membership_gives_the_same_bytes() {
        let zones = ["a", "b", "c"];
        assert_eq!(
            routes(Members::Zones(&zones, 2)),
            routes(Members::Zones(&zones, 2))
        );
        assert_ne!(
            routes(Members::Zones(&zones, 2)),
            routes(Members::Zones(&zones, 3))
        );
    }
}
