//! `spec.proxy` beside `spec.monitoring`: each proxy pod runs the stats exporter against the
//! proxy, the proxy's Service has the `metrics` port, a ServiceMonitor `<name>-proxy` scrapes
//! it, and the proxy's NetworkPolicy admits the scraper (docs/monitoring.md, "The proxy").

use serde_json::{Value, json};

use crate::common::sync_value;
use crate::proxy::{request, zoned};

/// The zoned proxy of two pods a zone, with `monitoring` and `security` merged in.
fn spec(monitoring: Value, security: Value) -> Value {
    let mut spec = zoned(2);
    spec["monitoring"] = monitoring;
    spec["security"] = security;
    spec
}

/// The child of `kind` and `name` in an answer.
fn child<'a>(answer: &'a Value, kind: &str, name: &str) -> Option<&'a Value> {
    answer["children"]
        .as_array()
        .expect("children")
        .iter()
        .find(|c| c["kind"] == kind && c["metadata"]["name"] == name)
}

/// The containers of the proxy Deployment of `zone`.
fn containers<'a>(answer: &'a Value, zone: &str) -> &'a Vec<Value> {
    let name = format!("cache-proxy-{zone}");
    let proxy = child(answer, "Deployment", &name).unwrap_or_else(|| panic!("no {name}"));
    proxy["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
}

fn exporter(answer: &Value, zone: &str) -> Value {
    let found = containers(answer, zone)
        .iter()
        .find(|c| c["name"] == "exporter");
    found
        .cloned()
        .unwrap_or_else(|| panic!("no exporter: {answer:#}"))
}

/// The cache pods' exporter sidecar.
fn cache_exporter(answer: &Value, zone: &str) -> Value {
    let name = format!("cache-{zone}");
    let cache = child(answer, "StatefulSet", &name).unwrap_or_else(|| panic!("no {name}"));
    let containers = cache["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    let found = containers.iter().find(|c| c["name"] == "exporter");
    found.cloned().expect("the cache's exporter")
}

#[test]
fn each_proxy_pod_runs_the_stats_exporter_against_the_proxy() {
    let monitoring = json!({"enabled": true,
                            "exporterResources": {"limits": {"memory": "48Mi"}}});
    let answer = sync_value(&request(spec(monitoring, json!({}))));
    for zone in ["zone-a", "zone-b", "zone-c"] {
        let sidecar = exporter(&answer, zone);
        assert_eq!(
            sidecar["args"],
            json!(["stats-exporter", "--memcached-addr", "127.0.0.1:11211"])
        );
        assert_eq!(sidecar["command"], json!(["/memcached-hook"]));
        let agent = &child(&answer, "Deployment", &format!("cache-proxy-{zone}")).expect("proxy")["spec"]
            ["template"]["spec"]["initContainers"][0];
        assert_eq!(sidecar["image"], agent["image"], "the hook's own image");
        assert_eq!(
            sidecar["ports"],
            json!([{"name": "metrics", "containerPort": 9150, "protocol": "TCP"}])
        );
        // The cache's exporter's resources and security context.
        let cache = cache_exporter(&answer, zone);
        assert_eq!(sidecar["resources"], cache["resources"]);
        assert_eq!(sidecar["resources"]["limits"]["memory"], "48Mi");
        assert_eq!(sidecar["securityContext"], cache["securityContext"]);
        assert_eq!(
            sidecar["securityContext"],
            containers(&answer, zone)[0]["securityContext"]
        );
    }
}

#[test]
fn with_tls_the_exporter_reads_the_proxys_loopback_plaintext_listener() {
    let tls = json!({"tls": {"enabled": true, "allowPlaintext": true,
                             "certificateSecretRef": {"name": "certs"}}});
    let answer = sync_value(&request(spec(json!({"enabled": true}), tls)));
    assert_eq!(
        exporter(&answer, "zone-a")["args"],
        json!(["stats-exporter", "--memcached-addr", "127.0.0.1:11213"])
    );
    let proxy_args = containers(&answer, "zone-a")[0]["args"].to_string();
    assert!(proxy_args.contains("notls:127.0.0.1:11213"), "{proxy_args}");
}

#[test]
fn the_proxys_service_monitor_scrapes_the_proxys_metrics_port() {
    let monitoring = json!({"enabled": true, "serviceMonitor": {
        "interval": "15s", "scrapeTimeout": "5s", "additionalLabels": {"release": "prom"}}});
    let answer = sync_value(&request(spec(monitoring, json!({}))));
    let service = child(&answer, "Service", "cache-proxy").expect("the proxy's Service");
    assert_eq!(
        service["spec"]["ports"],
        json!([
            {"name": "memcached", "port": 11211, "targetPort": "memcached", "protocol": "TCP"},
            {"name": "metrics", "port": 9150, "targetPort": "metrics", "protocol": "TCP"}
        ])
    );
    let monitor = child(&answer, "ServiceMonitor", "cache-proxy").expect("the proxy's monitor");
    let proxy_labels = json!({"app.kubernetes.io/name": "memcached-proxy",
                              "app.kubernetes.io/instance": "cache",
                              "app.kubernetes.io/managed-by": "memcached-operator"});
    assert_eq!(monitor["spec"]["selector"]["matchLabels"], proxy_labels);
    assert_eq!(
        monitor["spec"]["selector"]["matchLabels"],
        service["metadata"]["labels"]
    );
    assert_eq!(
        monitor["spec"]["endpoints"],
        json!([{"port": "metrics", "interval": "15s", "scrapeTimeout": "5s"}])
    );
    assert_eq!(
        monitor["spec"]["namespaceSelector"],
        json!({"matchNames": ["shop"]})
    );
    assert_eq!(monitor["metadata"]["labels"]["release"], "prom");
    // The cache's own monitor still selects the cache's Service only.
    let cache = child(&answer, "ServiceMonitor", "cache").expect("the cache's monitor");
    assert_eq!(
        cache["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
        "memcached"
    );
}

#[test]
fn without_monitoring_the_proxy_has_no_exporter_metrics_port_or_monitor() {
    let answer = sync_value(&request(zoned(2)));
    assert_eq!(containers(&answer, "zone-a").len(), 1);
    let service = child(&answer, "Service", "cache-proxy").expect("the proxy's Service");
    assert_eq!(service["spec"]["ports"].as_array().expect("ports").len(), 1);
    assert!(child(&answer, "ServiceMonitor", "cache-proxy").is_none());
    // Monitoring without a ServiceMonitor: the sidecar and the port, no monitor.
    let answer = sync_value(&request(spec(json!({"enabled": true}), json!({}))));
    assert_eq!(exporter(&answer, "zone-b")["name"], "exporter");
    assert!(child(&answer, "ServiceMonitor", "cache-proxy").is_none());
}

#[test]
fn the_monitoring_settings_roll_the_proxy_pods_and_the_routes_do_not() {
    let template = |answer: &Value| {
        child(answer, "Deployment", "cache-proxy-zone-a").expect("proxy")["spec"]["template"]
            .clone()
    };
    let plain = sync_value(&request(zoned(2)));
    let monitored = sync_value(&request(spec(json!({"enabled": true}), json!({}))));
    assert_ne!(template(&plain), template(&monitored));
    let mut bigger = spec(json!({"enabled": true}), json!({}));
    bigger["replicas"] = json!(3);
    assert_eq!(
        template(&monitored),
        template(&sync_value(&request(bigger)))
    );
}
