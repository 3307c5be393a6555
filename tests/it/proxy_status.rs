//! `status.proxy` and the proxy's address in the discovery ConfigMap: where clients reach
//! memcached's proxy and how many of its pods are ready, per zone (docs/behaviour.md, "Proxy").

use serde_json::{Value, json};

use crate::common::{sync_value, sync_with};
use crate::proxy::{config_map, observing, request, zoned};

/// `request(spec)` observing `answer`'s children, each proxy Deployment with `ready` ready pods
/// by name.
fn with_ready(spec: Value, answer: &Value, ready: &[(&str, i32)]) -> Value {
    let mut req = observing(spec, answer);
    for (name, n) in ready {
        req["children"]["Deployment.apps/v1"][*name]["status"] =
            json!({"replicas": n, "readyReplicas": n});
    }
    req
}

#[test]
fn with_zones_the_status_names_the_proxy_and_its_ready_pods_per_zone() {
    let first = sync_value(&request(zoned(2)));
    assert_eq!(
        first["status"]["proxy"],
        json!({"address": "cache-proxy.shop:11211", "desiredReplicas": 6, "ready": "0/6",
               "zones": [{"name": "zone-a"}, {"name": "zone-b"}, {"name": "zone-c"}]})
    );
    let req = with_ready(
        zoned(2),
        &first,
        &[("cache-proxy-zone-a", 2), ("cache-proxy-zone-c", 1)],
    );
    let later = sync_value(&req);
    assert_eq!(
        later["status"]["proxy"],
        json!({"address": "cache-proxy.shop:11211", "readyReplicas": 3, "desiredReplicas": 6,
               "ready": "3/6",
               "zones": [{"name": "zone-a", "readyReplicas": 2}, {"name": "zone-b"},
                         {"name": "zone-c", "readyReplicas": 1}]})
    );
}

#[test]
fn without_zones_the_one_proxy_deployment_counts() {
    let spec = json!({"workload": "StatefulSet", "replicas": 3,
                      "proxy": {"enabled": true, "replicas": 2}});
    let first = sync_value(&request(spec.clone()));
    let later = sync_value(&with_ready(spec, &first, &[("cache-proxy", 2)]));
    assert_eq!(
        later["status"]["proxy"],
        json!({"address": "cache-proxy.shop:11211", "readyReplicas": 2, "desiredReplicas": 2,
               "ready": "2/2"})
    );
}

#[test]
fn without_the_proxy_the_status_and_discovery_say_nothing_of_it() {
    let spec = json!({"workload": "StatefulSet", "replicas": 2,
                      "discovery": {"configMap": {"enabled": true}}});
    let answer = sync_value(&request(spec));
    assert!(
        answer["status"].get("proxy").is_none(),
        "{:#}",
        answer["status"]
    );
    let servers = config_map(&answer, "cache-servers").expect("the discovery ConfigMap");
    assert!(servers["data"].get("proxy").is_none(), "{servers:#}");
}

#[test]
fn the_discovery_config_map_names_the_proxy() {
    let mut spec = zoned(2);
    spec["discovery"] = json!({"configMap": {"enabled": true}});
    let answer = sync_value(&request(spec));
    let servers = config_map(&answer, "cache-servers").expect("the discovery ConfigMap");
    assert_eq!(servers["data"]["proxy"], "cache-proxy.shop:11211");
    assert_eq!(
        servers["data"]["proxy"], answer["status"]["proxy"]["address"],
        "one address in both places"
    );
}

/// The status stays small: a zoned proxy adds a few hundred bytes at most.
#[test]
fn the_proxy_status_is_small() {
    let answer = sync_value(&request(zoned(2)));
    let bytes = serde_json::to_string(&answer["status"]["proxy"])
        .expect("encodes")
        .len();
    assert!(bytes < 200, "{bytes} bytes");
}

/// A hook told its own image (every proxy pod runs its reload agent).
fn with_agent_image() -> memcached_hook::Options {
    memcached_hook::Options {
        reload_agent_image: "ghcr.io/corp/memcached-hook:0.1.0".into(),
        ..memcached_hook::Options::default()
    }
}

/// `ProxyReady` says whether every proxy pod wanted is ready; the cache's own conditions do not
/// count the proxy's pods.
#[test]
fn proxy_ready_follows_the_proxy_pods_and_leaves_ready_alone() {
    let options = with_agent_image();
    let sync_value = |req: &Value| sync_with(req, &options);
    let first = sync_value(&request(zoned(2)));
    let proxy_ready = crate::common::condition(&first, "ProxyReady");
    assert_eq!(
        (proxy_ready.status.as_str(), proxy_ready.reason.as_str()),
        ("False", "ProxyPodsNotReady")
    );
    assert_eq!(
        proxy_ready.message,
        "0 of 6 proxy pods ready (short: zone-a 0/2, zone-b 0/2, zone-c 0/2)"
    );
    let all = [
        ("cache-proxy-zone-a", 2),
        ("cache-proxy-zone-b", 2),
        ("cache-proxy-zone-c", 2),
    ];
    let later = sync_value(&with_ready(zoned(2), &first, &all));
    let proxy_ready = crate::common::condition(&later, "ProxyReady");
    assert_eq!(
        (proxy_ready.status.as_str(), proxy_ready.message.as_str()),
        ("True", "6 of 6 proxy pods ready")
    );
    let ready = |answer: &Value| crate::common::condition(answer, "Ready").status;
    assert_eq!(
        ready(&later),
        ready(&first),
        "the cache's Ready ignores the proxy"
    );
    let mut off = zoned(2);
    off["proxy"] = json!({"enabled": false});
    let mut req = observing(off, &later);
    req["parent"]["status"] = later["status"].clone();
    let answer = sync_value(&req);
    let types = |answer: &Value| -> Vec<String> {
        answer["status"]["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .filter_map(|c| c["type"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(types(&later).contains(&"ProxyReady".to_owned()));
    assert!(
        !types(&answer).contains(&"ProxyReady".to_owned()),
        "{:?}",
        types(&answer)
    );
    assert!(answer["status"].get("proxy").is_none());
}

/// With the placeholder agent image no proxy pod can start its reload agent: `ProxyReady` says so.
#[test]
fn proxy_ready_names_a_placeholder_agent_image() {
    let answer = sync_value(&request(zoned(1)));
    let proxy_ready = crate::common::condition(&answer, "ProxyReady");
    assert_eq!(
        (proxy_ready.status.as_str(), proxy_ready.reason.as_str()),
        ("False", "AgentImagePlaceholder")
    );
    assert!(
        proxy_ready.message.contains("--reload-agent-image"),
        "{proxy_ready:?}"
    );
}
