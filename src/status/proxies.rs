//! `status.proxy`: the address of memcached's proxy and its ready pods, from the observed proxy
//! Deployments (docs/behaviour.md, "Proxy").

use super::SpecCondition;
use crate::api::effective::Effective;
use crate::api::{ProxyStatus, ProxyZoneStatus};
use crate::children::{discovery, own_image, proxy_pods};
use crate::hook::Observed;

/// What `status.proxy` is computed from.
#[derive(Clone, Copy, Debug)]
pub struct Wanted<'a> {
    /// The parent's name.
    pub name: &'a str,
    /// The parent's namespace.
    pub namespace: &'a str,
    /// `spec.proxy.replicas`: per zone with zones.
    pub replicas: i32,
    /// With `spec.zones`: the zones, in spec order.
    pub zones: Option<&'a [&'a str]>,
}

/// `status.proxy` of the Memcached `name` in `namespace` with the spec `e`; `None` with the
/// proxy off.
#[must_use]
pub fn of(
    (name, namespace): (&str, &str),
    e: &Effective<'_>,
    observed: &Observed,
) -> Option<ProxyStatus> {
    let proxy = e.proxy?;
    let wanted = Wanted {
        name,
        namespace,
        replicas: proxy.replicas,
        zones: e.zones.as_ref().map(|z| z.names.as_slice()),
    };
    Some(status(wanted, observed))
}

/// `status.proxy` of `w`, its ready pods read from the `observed` children.
#[must_use]
pub fn status(w: Wanted<'_>, observed: &Observed) -> ProxyStatus {
    let ready_of = |zone: Option<&str>| {
        observed
            .find(
                "apps/v1",
                "Deployment",
                &proxy_pods::workload_name(w.name, zone),
            )
            .and_then(|d| d.status.ready_replicas)
    };
    let zones = w.zones.map(|names| {
        names
            .iter()
            .map(|zone| ProxyZoneStatus {
                name: (*zone).to_owned(),
                ready_replicas: ready_of(Some(zone)),
            })
            .collect::<Vec<_>>()
    });
    let (ready, deployments) = match &zones {
        Some(zones) => (
            zones
                .iter()
                .filter_map(|z| z.ready_replicas)
                .fold(0i32, i32::saturating_add),
            zones.len(),
        ),
        None => (ready_of(None).unwrap_or(0), 1),
    };
    let desired = w
        .replicas
        .saturating_mul(i32::try_from(deployments).unwrap_or(i32::MAX));
    ProxyStatus {
        address: discovery::proxy_address(w.name, w.namespace),
        ready_replicas: (ready != 0).then_some(ready),
        desired_replicas: desired,
        ready: format!("{ready}/{desired}"),
        zones,
    }
}

/// The `ProxyReady` condition of `p`: `True` once every proxy pod wanted is ready (with zones,
/// in every zone), `False` naming how many are and, with zones, the zones short of them.
/// `agent_image` is the hook's `--reload-agent-image` (of a valid spec): still the placeholder,
/// no proxy pod can start its reload agent, and the condition says so.
#[must_use]
pub fn condition(p: &ProxyStatus, agent_image: Option<&str>) -> SpecCondition {
    if let Some(image) = agent_image.filter(|i| own_image::is_placeholder(i)) {
        return SpecCondition {
            status: false,
            reason: "AgentImagePlaceholder",
            message: format!(
                "The reload-agent image {image} is a placeholder no node can pull, and every \
                 proxy pod runs the agent: set the hook's --reload-agent-image \
                 (MEMCACHED_HOOK_RELOAD_AGENT_IMAGE) to the hook's own image"
            ),
        };
    }
    let ready = p.ready_replicas.unwrap_or(0);
    let zones = p.zones.as_deref().unwrap_or_default();
    let per_zone = i32::try_from(zones.len())
        .ok()
        .filter(|n| *n > 0)
        .map_or(p.desired_replicas, |n| p.desired_replicas / n);
    let short: Vec<String> = zones
        .iter()
        .filter(|z| z.ready_replicas.unwrap_or(0) < per_zone)
        .map(|z| format!("{} {}/{per_zone}", z.name, z.ready_replicas.unwrap_or(0)))
        .collect();
    if ready >= p.desired_replicas && short.is_empty() {
        return SpecCondition {
            status: true,
            reason: "ProxyPodsReady",
            message: format!("{ready} of {} proxy pods ready", p.desired_replicas),
        };
    }
    let zones = if short.is_empty() {
        String::new()
    } else {
        format!(" (short: {})", short.join(", "))
    };
    SpecCondition {
        status: false,
        reason: "ProxyPodsNotReady",
        message: format!("{ready} of {} proxy pods ready{zones}", p.desired_replicas),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(deployments: &[(&str, i32)]) -> Observed {
        let children: Vec<serde_json::Value> = deployments
            .iter()
            .map(|(name, ready)| {
                serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": name}, "status": {"readyReplicas": ready}})
            })
            .collect();
        let by_name: serde_json::Map<String, serde_json::Value> = children
            .into_iter()
            .map(|c| {
                (
                    c["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    c,
                )
            })
            .collect();
        serde_json::from_value(serde_json::json!({"Deployment.apps/v1": by_name}))
            .expect("observed children")
    }

    #[test]
    fn with_zones_each_zone_counts_its_own_deployment() {
        let zones = ["zone-a", "zone-b", "zone-c"];
        let seen = observed(&[
            ("cache-proxy-zone-a", 2),
            ("cache-proxy-zone-c", 1),
            ("cache-zone-b", 2),
        ]);
        let s = status(
            Wanted {
                name: "cache",
                namespace: "shop",
                replicas: 2,
                zones: Some(&zones),
            },
            &seen,
        );
        assert_eq!(s.address, "cache-proxy.shop:11211");
        assert_eq!((s.ready_replicas, s.desired_replicas), (Some(3), 6));
        assert_eq!(s.ready, "3/6");
        let per_zone: Vec<(String, Option<i32>)> = s
            .zones
            .unwrap_or_default()
            .into_iter()
            .map(|z| (z.name, z.ready_replicas))
            .collect();
        assert_eq!(
            per_zone,
            [
                ("zone-a".to_owned(), Some(2)),
                ("zone-b".to_owned(), None),
                ("zone-c".to_owned(), Some(1))
            ]
        );
    }

    #[test]
    fn without_zones_the_one_deployment_counts() {
        let wanted = Wanted {
            name: "cache",
            namespace: "shop",
            replicas: 3,
            zones: None,
        };
        let none = status(wanted, &Observed::default());
        assert_eq!((none.ready_replicas, none.ready.as_str()), (None, "0/3"));
        assert!(none.zones.is_none());
        let seen = status(wanted, &observed(&[("cache-proxy", 3)]));
        assert_eq!(seen.ready, "3/3");
        let ready = condition(&seen, Some("ghcr.io/corp/memcached-hook:1"));
        assert_eq!(
            (ready.status, ready.reason, ready.message.as_str()),
            (true, "ProxyPodsReady", "3 of 3 proxy pods ready")
        );
        let not = condition(&none, None);
        assert_eq!((not.status, not.reason), (false, "ProxyPodsNotReady"));
        assert_eq!(not.message, "0 of 3 proxy pods ready");
        let placeholder = condition(&seen, Some(own_image::DEFAULT_IMAGE));
        assert_eq!(
            (placeholder.status, placeholder.reason),
            (false, "AgentImagePlaceholder")
        );
    }

    #[test]
    fn a_zone_short_of_proxy_pods_is_named_even_when_the_total_is_reached() {
        let zones = ["zone-a", "zone-b"];
        let s = status(
            Wanted {
                name: "cache",
                namespace: "shop",
                replicas: 2,
                zones: Some(&zones),
            },
            &observed(&[("cache-proxy-zone-a", 4), ("cache-proxy-zone-b", 1)]),
        );
        let c = condition(&s, None);
        assert!(!c.status);
        assert_eq!(c.message, "5 of 4 proxy pods ready (short: zone-b 1/2)");
    }
}
