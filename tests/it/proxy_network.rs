//! `spec.proxy` beside `spec.security.networkPolicy`: the proxy's own NetworkPolicy holds the
//! allowed sources for clients that go through it, and `directClients: false` admits only the
//! proxy's pods to memcached's ports; the proxy's metrics port admits the sources the cache's
//! does.

use serde_json::{Value, json};

use crate::common::sync_value;
use crate::proxy::request;

/// Two zones of StatefulSets behind the proxy, `proxy` merged into its block, a NetworkPolicy
/// from `sources`, and monitoring when `metrics`.
fn spec(proxy: Value, sources: Value, metrics: bool) -> Value {
    let mut block = json!({"enabled": true});
    block
        .as_object_mut()
        .expect("object")
        .extend(proxy.as_object().expect("object").clone());
    let mut spec = json!({"workload": "StatefulSet", "replicas": 1,
                          "zones": {"names": ["zone-a", "zone-b"]}, "proxy": block,
                          "security": {"networkPolicy": {"enabled": true, "allowedSources": sources}}});
    if metrics {
        spec["monitoring"] = json!({"enabled": true});
    }
    spec
}

/// The NetworkPolicy `name` of an answer.
fn policy<'a>(answer: &'a Value, name: &str) -> &'a Value {
    answer["children"]
        .as_array()
        .expect("children")
        .iter()
        .find(|c| c["kind"] == "NetworkPolicy" && c["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no NetworkPolicy {name}: {answer}"))
}

/// Each ingress rule as (ports, the `app.kubernetes.io/name` or `role` of each source; `None`
/// for every source).
fn rules(policy: &Value) -> Vec<(Vec<i64>, Option<Vec<String>>)> {
    let ingress = policy["spec"]["ingress"].as_array().expect("ingress");
    ingress
        .iter()
        .map(|r| {
            let ports = r["ports"].as_array().expect("ports");
            let ports = ports
                .iter()
                .map(|p| p["port"].as_i64().expect("a number"))
                .collect();
            let from = r["from"].as_array().map(|from| {
                from.iter()
                    .map(|peer| {
                        let labels = &peer["podSelector"]["matchLabels"];
                        let label = labels["app.kubernetes.io/name"].as_str();
                        label
                            .or(labels["role"].as_str())
                            .expect("a label")
                            .to_owned()
                    })
                    .collect()
            });
            (ports, from)
        })
        .collect()
}

fn web() -> Value {
    json!([{"podSelector": {"matchLabels": {"role": "web"}}}])
}

#[test]
fn by_default_the_sources_reach_the_pods_and_the_proxy() {
    let answer = sync_value(&request(spec(json!({}), web(), false)));
    assert_eq!(
        rules(policy(&answer, "cache")),
        [(
            vec![11211],
            Some(vec!["web".to_owned(), "memcached-proxy".to_owned()])
        )]
    );
    let proxy = policy(&answer, "cache-proxy");
    assert_eq!(rules(proxy), [(vec![11211], Some(vec!["web".to_owned()]))]);
    assert_eq!(
        proxy["spec"]["podSelector"]["matchLabels"],
        json!({"app.kubernetes.io/name": "memcached-proxy", "app.kubernetes.io/instance": "cache",
               "app.kubernetes.io/managed-by": "memcached-operator"})
    );
}

#[test]
fn without_direct_clients_only_the_proxy_reaches_memcached_and_the_scraper_the_metrics() {
    let answer = sync_value(&request(spec(json!({"directClients": false}), web(), true)));
    assert_eq!(
        rules(policy(&answer, "cache")),
        [
            (vec![11211], Some(vec!["memcached-proxy".to_owned()])),
            (vec![9150], Some(vec!["web".to_owned()])),
        ]
    );
    // The proxy's metrics port admits the same sources as the cache's.
    assert_eq!(
        rules(policy(&answer, "cache-proxy")),
        [(vec![11211, 9150], Some(vec!["web".to_owned()]))]
    );
    // Every source allowed: still only the proxy on memcached's port, everyone on the metrics.
    let answer = sync_value(&request(spec(
        json!({"directClients": false}),
        json!([]),
        true,
    )));
    assert_eq!(
        rules(policy(&answer, "cache")),
        [
            (vec![11211], Some(vec!["memcached-proxy".to_owned()])),
            (vec![9150], None)
        ]
    );
    assert_eq!(
        rules(policy(&answer, "cache-proxy")),
        [(vec![11211, 9150], None)]
    );
}

#[test]
fn every_source_allowed_keeps_one_open_rule() {
    let answer = sync_value(&request(spec(json!({}), json!([]), false)));
    assert_eq!(rules(policy(&answer, "cache")), [(vec![11211], None)]);
}

#[test]
fn keeping_clients_away_without_a_network_policy_is_refused() {
    let mut s = spec(json!({"directClients": false}), web(), false);
    let allowed: memcached_hook::api::MemcachedSpec =
        serde_json::from_value(s.clone()).expect("spec");
    assert!(memcached_hook::api::validation::validate("cache", &allowed).is_empty());
    s["security"] = json!({});
    let s: memcached_hook::api::MemcachedSpec = serde_json::from_value(s).expect("spec");
    let problems: Vec<String> = memcached_hook::api::validation::validate("cache", &s)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("spec.proxy.directClients: Invalid value: false")
            && problems[0].contains("without a NetworkPolicy the cache's pods admit every client"),
        "{problems:?}"
    );
}
