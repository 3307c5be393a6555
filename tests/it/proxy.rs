//! `spec.proxy`: the refusals where memcached's proxy cannot go, and the route configuration
//! `<name>-proxy` built from the same membership as the server lists (docs/behaviour.md,
//! "Proxy").

use serde_json::{Value, json};

use crate::common::{controller, sync_value};

/// A first-sync request for the Memcached `cache` in `shop` with `spec`, under a
/// CompositeController that also declares StatefulSets and ConfigMaps.
pub(crate) fn request(spec: Value) -> Value {
    let mut controller = controller();
    let kinds = controller["spec"]["childResources"]
        .as_array_mut()
        .expect("list");
    kinds.push(json!({"apiVersion": "apps/v1", "resource": "statefulsets"}));
    kinds.push(json!({"apiVersion": "v1", "resource": "configmaps"}));
    json!({
        "controller": controller,
        "parent": {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                   "metadata": {"name": "cache", "namespace": "shop", "generation": 1}, "spec": spec},
        "children": {},
        "related": {}
    })
}

fn violations(spec: Value) -> Vec<String> {
    let spec: memcached_hook::api::MemcachedSpec = serde_json::from_value(spec).expect("spec");
    memcached_hook::api::validation::validate("cache", &spec)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The ConfigMaps of an answer, by name.
pub(crate) fn config_map<'a>(answer: &'a Value, name: &str) -> Option<&'a Value> {
    answer["children"]
        .as_array()?
        .iter()
        .find(|c| c["kind"] == "ConfigMap" && c["metadata"]["name"] == name)
}

fn routes(answer: &Value) -> &str {
    config_map(answer, "cache-proxy").expect("the proxy's ConfigMap")["data"]["routes.lua"]
        .as_str()
        .expect("routes.lua")
}

pub(crate) fn zoned(replicas: i32) -> Value {
    json!({"workload": "StatefulSet", "replicas": replicas,
           "zones": {"names": ["zone-a", "zone-b", "zone-c"]},
           "proxy": {"enabled": true}})
}

#[test]
fn the_proxy_is_refused_with_sasl_naming_both_fields() {
    let shown = violations(json!({
        "workload": "StatefulSet",
        "proxy": {"enabled": true},
        "security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": "users"}}}
    }));
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].starts_with(
            "spec.proxy.enabled: Invalid value: true: spec.proxy.enabled cannot be used with \
             spec.security.sasl.enabled"
        ),
        "{shown:?}"
    );
}

#[test]
fn the_proxy_needs_the_plaintext_port_beside_tls() {
    let tls = |allow: bool| {
        json!({
            "workload": "StatefulSet",
            "proxy": {"enabled": true},
            "security": {"tls": {"enabled": true, "allowPlaintext": allow,
                                 "certificateSecretRef": {"name": "certs"}}}
        })
    };
    let shown = violations(tls(false));
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].contains("needs spec.security.tls.allowPlaintext: true")
            && shown[0].contains("checks no certificate"),
        "{shown:?}"
    );
    assert_eq!(violations(tls(true)), Vec::<String>::new());
}

#[test]
fn the_proxy_needs_stable_pod_names_unless_the_cache_is_one_pod_without_zones() {
    let deployment = |extra: Value| {
        let mut spec = json!({"proxy": {"enabled": true}});
        for (k, v) in extra.as_object().expect("map") {
            spec[k] = v.clone();
        }
        violations(spec)
    };
    let refused = deployment(json!({"replicas": 3}));
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with(
            "spec.workload: Invalid value: \"Deployment\": spec.proxy.enabled needs \
             spec.workload: StatefulSet"
        ),
        "{refused:?}"
    );
    let zones = json!({"zones": {"names": ["zone-a", "zone-b"]}});
    assert_eq!(deployment(zones).len(), 1);
    assert_eq!(deployment(json!({})), Vec::<String>::new());
    assert_eq!(deployment(json!({"replicas": 1})), Vec::<String>::new());
}

#[test]
fn with_zones_the_routes_list_every_zone_pod_by_its_stable_name() {
    let answer = sync_value(&request(zoned(2)));
    let text = routes(&answer);
    for zone in ["zone-a", "zone-b", "zone-c"] {
        assert!(
            text.contains(&format!("[\"{zone}\"] = {{ backends = {{")),
            "{text}"
        );
        for i in 0..2 {
            let host = format!("\"cache-{zone}-{i}.cache.shop.svc:11211\",");
            assert!(text.contains(&host), "{text}");
        }
        assert!(!text.contains(&format!("cache-{zone}-2.")), "{text}");
    }
    assert!(text.contains("local_zone_from_env(\"MEMCACHED_PROXY_ZONE\")"));
    assert!(text.contains("default = route_allsync{ children = \"set_zones\" },"));
    assert!(text.contains("get = route_zfailover{ children = \"set_zones\" },"));
    // The proxy's ConfigMap does not bring the server list with it.
    assert!(config_map(&answer, "cache-servers").is_none());
}

#[test]
fn the_routes_follow_the_replica_count() {
    let two = sync_value(&request(zoned(2)));
    let three = sync_value(&request(zoned(3)));
    assert!(routes(&three).contains("\"cache-zone-b-2.cache.shop.svc:11211\","));
    assert_ne!(routes(&two), routes(&three));
    assert_eq!(routes(&two), routes(&sync_value(&request(zoned(2)))));
}

#[test]
fn without_the_proxy_there_is_no_proxy_config_map() {
    let mut spec = zoned(2);
    spec["proxy"] = json!({"enabled": false});
    let answer = sync_value(&request(spec));
    assert!(config_map(&answer, "cache-proxy").is_none());
}

#[test]
fn beside_the_server_list_both_config_maps_are_emitted() {
    let mut spec = zoned(1);
    spec["discovery"] = json!({"configMap": {"enabled": true}});
    let answer = sync_value(&request(spec));
    assert!(config_map(&answer, "cache-servers").is_some());
    assert!(routes(&answer).contains("\"cache-zone-c-0.cache.shop.svc:11211\","));
}

/// `request(spec)` with the children of `answer` observed, each as Metacontroller stores it
/// (with its last-applied annotation and the namespace).
pub(crate) fn observing(spec: Value, answer: &Value) -> Value {
    let mut req = request(spec);
    let mut children = json!({});
    for child in answer["children"].as_array().expect("children") {
        let mut obj = child.clone();
        let applied = serde_json::to_string(child).expect("encodes");
        obj["metadata"]["annotations"] =
            json!({"metacontroller.k8s.io/last-applied-configuration": applied});
        obj["metadata"]["namespace"] = json!("shop");
        let key = format!(
            "{}.{}",
            obj["kind"].as_str().expect("kind"),
            obj["apiVersion"].as_str().expect("apiVersion")
        );
        let name = obj["metadata"]["name"].as_str().expect("name").to_owned();
        children[key][name] = obj;
    }
    req["children"] = children;
    req
}

#[test]
fn a_spec_turned_invalid_keeps_the_running_proxy_configuration() {
    let answer = sync_value(&request(zoned(2)));
    let mut broken = zoned(3);
    broken["security"] =
        json!({"sasl": {"enabled": true, "credentialsSecretRef": {"name": "users"}}});
    let kept = sync_value(&observing(broken, &answer));
    assert_eq!(routes(&kept), routes(&answer));
    let degraded = crate::common::condition(&kept, "Degraded");
    assert_eq!(degraded.reason, "InvalidSpec");
    assert!(
        degraded.message.contains("spec.proxy.enabled"),
        "{degraded:?}"
    );
}

#[test]
fn the_second_sync_rewrites_nothing_in_the_routes() {
    let first = sync_value(&request(zoned(2)));
    let second = sync_value(&observing(zoned(2), &first));
    assert_eq!(routes(&second), routes(&first));
}

/// The children of `kind` named with `prefix`, by name.
fn named<'a>(answer: &'a Value, kind: &str, prefix: &str) -> Vec<&'a Value> {
    answer["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter(|c| {
            c["kind"] == kind
                && c["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(prefix))
        })
        .collect()
}

#[test]
fn with_zones_a_proxy_deployment_per_zone_is_pinned_to_it_and_told_its_zone() {
    let answer = sync_value(&request(zoned(2)));
    let proxies = named(&answer, "Deployment", "cache-proxy-");
    assert_eq!(proxies.len(), 3, "{answer:#}");
    for (proxy, zone) in proxies.iter().zip(["zone-a", "zone-b", "zone-c"]) {
        assert_eq!(proxy["metadata"]["name"], format!("cache-proxy-{zone}"));
        assert_eq!(proxy["spec"]["replicas"], 2);
        let pod = &proxy["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        assert_eq!(container["image"], "memcached:1.6.45");
        assert_eq!(
            container["env"],
            json!([{"name": "MEMCACHED_PROXY_ZONE", "value": zone}])
        );
        let args = container["args"].as_array().expect("args");
        assert!(
            args.contains(&json!(
                "proxy_config=routelib,proxy_arg=/etc/memcached/proxy/routes.lua"
            )),
            "{args:?}"
        );
        let term = &pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchExpressions"][0];
        assert_eq!(
            *term,
            json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]})
        );
        assert_eq!(pod["volumes"][0]["configMap"]["name"], "cache-proxy");
        let labels = &proxy["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels["app.kubernetes.io/name"], "memcached-proxy");
        assert_eq!(labels["memcached.c5c3.io/zone"], zone);
    }
    // The cache's headless Service does not select the proxy's pods.
    let services = named(&answer, "Service", "cache");
    let cache = services
        .iter()
        .find(|s| s["metadata"]["name"] == "cache")
        .expect("the cache's Service");
    assert_eq!(
        cache["spec"]["selector"]["app.kubernetes.io/name"],
        "memcached"
    );
    let proxy = services
        .iter()
        .find(|s| s["metadata"]["name"] == "cache-proxy")
        .expect("the proxy's Service");
    assert_eq!(proxy["spec"]["trafficDistribution"], "PreferClose");
    assert_eq!(
        proxy["spec"]["selector"]["app.kubernetes.io/name"],
        "memcached-proxy"
    );
    assert!(proxy["spec"].get("clusterIP").is_none());
}

/// A new membership changes the routes but not the proxies' pod template: the reload agent beside
/// each proxy has it load the new routes by SIGHUP, and no proxy restarts.
#[test]
fn a_new_membership_leaves_the_proxy_pod_template_equal() {
    let template = |answer: &Value| {
        named(answer, "Deployment", "cache-proxy-zone-a")[0]["spec"]["template"].clone()
    };
    let two = sync_value(&request(zoned(2)));
    let three = sync_value(&request(zoned(3)));
    assert_ne!(routes(&two), routes(&three), "the membership changed");
    assert_eq!(template(&two), template(&three));
    let with_four_zones = {
        let mut spec = zoned(2);
        spec["zones"]["names"] = json!(["zone-a", "zone-b", "zone-c", "zone-d"]);
        sync_value(&request(spec))
    };
    assert_eq!(template(&two), template(&with_four_zones));
    // The proxy's own settings still change it.
    let mut bigger = zoned(2);
    bigger["proxy"]["resources"] = json!({"requests": {"cpu": "200m"}});
    assert_ne!(template(&two), template(&sync_value(&request(bigger))));
}

/// Each proxy pod runs the reload agent in proxy mode, watching the mounted routes and
/// signalling the proxy in the same process namespace.
#[test]
fn the_proxy_pod_runs_the_reload_agent_in_proxy_mode() {
    let answer = sync_value(&request(zoned(2)));
    let proxy = named(&answer, "Deployment", "cache-proxy-zone-b")[0];
    let pod = &proxy["spec"]["template"]["spec"];
    assert_eq!(pod["shareProcessNamespace"], true);
    let agent = &pod["initContainers"][0];
    assert_eq!(agent["name"], "reload-agent");
    assert_eq!(agent["restartPolicy"], "Always");
    assert_eq!(
        agent["args"],
        json!([
            "reload-agent",
            "--proxy-routes",
            "/etc/memcached/proxy/routes.lua",
            "--admin-addr",
            "127.0.0.1:11211"
        ])
    );
    assert_eq!(
        agent["volumeMounts"],
        json!([{"name": "proxy-routes", "mountPath": "/etc/memcached/proxy", "readOnly": true}])
    );
    assert_eq!(
        agent["securityContext"], pod["containers"][0]["securityContext"],
        "the agent runs as the proxy's user"
    );
    assert!(
        proxy["spec"]["template"]["metadata"]
            .get("annotations")
            .is_none(),
        "{proxy:#}"
    );
}

#[test]
fn observed_proxy_deployments_are_not_taken_for_leaving_zone_workloads() {
    let first = sync_value(&request(zoned(2)));
    let second = sync_value(&observing(zoned(2), &first));
    let names = |answer: &Value| {
        let mut out: Vec<String> = answer["children"]
            .as_array()
            .expect("children")
            .iter()
            .map(|c| format!("{}/{}", c["kind"], c["metadata"]["name"]))
            .collect();
        out.sort();
        out
    };
    assert_eq!(names(&second), names(&first));
    let text = second["status"].to_string();
    assert!(
        !text.contains("ZoneSwitch") && !text.contains("WorkloadMigration"),
        "{text}"
    );
    // Turned off, the proxy's children are no longer answered (Metacontroller deletes them)
    // and the cache's are as before.
    let mut off = zoned(2);
    off["proxy"] = json!({"enabled": false});
    let third = sync_value(&observing(off, &second));
    assert!(named(&third, "Deployment", "cache-proxy").is_empty());
    assert!(named(&third, "Service", "cache-proxy").is_empty());
    assert_eq!(named(&third, "StatefulSet", "cache-zone-").len(), 3);
}

#[test]
fn the_proxy_replicas_are_bounded_and_a_zone_cannot_take_a_proxy_name() {
    let shown = violations(json!({"workload": "StatefulSet",
                                  "proxy": {"enabled": true, "replicas": 0}}));
    assert_eq!(
        shown,
        ["spec.proxy.replicas: Invalid value: 0: should be greater than or equal to 1"]
    );
    let mut spec = zoned(1);
    spec["zones"]["names"] = json!(["zone-a", "proxy-b"]);
    let shown = violations(spec);
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(shown[0].starts_with("spec.zones.names[1]: Invalid value: \"proxy-b\""));
}

#[test]
fn a_network_policy_with_sources_admits_the_proxy() {
    let mut spec = zoned(1);
    spec["security"] = json!({"networkPolicy": {"enabled": true, "allowedSources": [
        {"podSelector": {"matchLabels": {"role": "web"}}}
    ]}});
    let answer = sync_value(&request(spec));
    let policy = named(&answer, "NetworkPolicy", "cache")[0];
    let from = &policy["spec"]["ingress"][0]["from"];
    assert_eq!(from.as_array().map(Vec::len), Some(2), "{from}");
    assert_eq!(
        from[1]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "memcached-proxy"
    );
}

#[test]
fn with_tls_clients_reach_the_proxy_by_tls() {
    let mut spec = zoned(1);
    spec["security"] = json!({"tls": {"enabled": true, "allowPlaintext": true,
                                      "enableClientCert": true,
                                      "certificateSecretRef": {"name": "certs"}}});
    let answer = sync_value(&request(spec));
    let proxy = named(&answer, "Deployment", "cache-proxy-zone-a")[0];
    let pod = &proxy["spec"]["template"]["spec"];
    let args: Vec<&str> = pod["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for want in [
        "-Z",
        "ssl_verify_mode=2",
        "ssl_ca_cert=/etc/memcached/tls/ca.crt",
    ] {
        assert!(args.contains(&want), "{args:?}");
    }
    assert_eq!(pod["volumes"][1]["secret"]["secretName"], "certs");
    // TLS only on the proxy's port; plaintext on the pod's loopback, for the reload agent.
    assert!(
        args.windows(2)
            .any(|w| w == ["-l", "notls:127.0.0.1:11213"]),
        "{args:?}"
    );
    assert!(args.windows(2).any(|w| w == ["-l", "*:11211"]), "{args:?}");
    assert_eq!(pod["initContainers"][0]["args"][4], "127.0.0.1:11213");
    // The routes still reach the pods on their plaintext port.
    assert!(routes(&answer).contains("\"cache-zone-a-0.cache.shop.svc:11211\","));
}

#[test]
fn a_name_too_long_for_the_proxy_service_is_refused() {
    // One Deployment pod: the StatefulSet's own, shorter bound does not apply.
    let spec: memcached_hook::api::MemcachedSpec =
        serde_json::from_value(json!({"proxy": {"enabled": true}})).expect("spec");
    let long = "c".repeat(58);
    let shown: Vec<String> = memcached_hook::api::validation::validate(&long, &spec)
        .iter()
        .map(ToString::to_string)
        .filter(|v| v.starts_with("metadata.name"))
        .collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(shown[0].contains("at most 57 characters with spec.proxy.enabled"));
    let fits = "c".repeat(57);
    assert!(memcached_hook::api::validation::validate(&fits, &spec).is_empty());
}
