//! Monitoring, SASL/TLS, NetworkPolicy and autoscaling: the exporter sidecar, the ServiceMonitor,
//! secret volumes and memcached flags, the NetworkPolicy and the HPA (docs/behaviour.md).

use serde_json::{Value, json};

use crate::common::{child, condition, container, must, render, request_json, sync_value};

fn pod(r: &Value) -> &Value {
    &must(r, "Deployment")["spec"]["template"]["spec"]
}

#[test]
fn exporter_sidecar_and_metrics_port() {
    let csc = json!({"runAsNonRoot": true});
    let r = render(
        json!({"monitoring": {"enabled": true, "exporterResources": {"limits": {"memory": "64Mi"}}},
                          "security": {"containerSecurityContext": csc}}),
    );
    let containers = pod(&r)["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 2);
    assert_eq!(
        containers[1],
        json!({"name": "exporter", "image": "prom/memcached-exporter:v0.15.4",
        "ports": [{"name": "metrics", "containerPort": 9150, "protocol": "TCP"}],
        "resources": {"limits": {"memory": "64Mi"}}, "securityContext": csc})
    );
    let ports = &must(&r, "Service")["spec"]["ports"];
    assert_eq!(
        ports[1],
        json!({"name": "metrics", "port": 9150, "targetPort": "metrics", "protocol": "TCP"})
    );
    let custom = render(json!({"monitoring": {"enabled": true, "exporterImage": "exporter:v1"}}));
    assert_eq!(pod(&custom)["containers"][1]["image"], "exporter:v1");
    let off = render(json!({"monitoring": {"enabled": false, "serviceMonitor": {}}}));
    assert_eq!(pod(&off)["containers"].as_array().map(Vec::len), Some(1));
    assert!(child(&off, "ServiceMonitor").is_none());
    assert_eq!(
        must(&off, "Service")["spec"]["ports"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn service_monitor() {
    let r = render(json!({"monitoring": {"enabled": true, "serviceMonitor": {
        "additionalLabels": {"release": "prom", "app.kubernetes.io/name": "override"}, "interval": "15s"}}}));
    let sm = must(&r, "ServiceMonitor");
    assert_eq!(sm["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(
        sm["metadata"]["labels"],
        json!({"release": "prom", "app.kubernetes.io/name": "memcached",
        "app.kubernetes.io/instance": "my-cache", "app.kubernetes.io/managed-by": "memcached-operator"})
    );
    assert_eq!(
        sm["spec"],
        json!({
        "selector": {"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "my-cache",
                                     "app.kubernetes.io/managed-by": "memcached-operator"}},
        "namespaceSelector": {"matchNames": ["default"]},
        "endpoints": [{"port": "metrics", "interval": "15s", "scrapeTimeout": "10s"}]})
    );
    let defaults = render(json!({"monitoring": {"enabled": true, "serviceMonitor": {}}}));
    assert_eq!(
        must(&defaults, "ServiceMonitor")["spec"]["endpoints"][0],
        json!({"port": "metrics", "interval": "30s", "scrapeTimeout": "10s"})
    );
    assert!(
        child(
            &render(json!({"monitoring": {"enabled": true}})),
            "ServiceMonitor"
        )
        .is_none()
    );
}

#[test]
fn service_monitor_not_declared_is_reported() {
    let mut request = request_json(json!({"monitoring": {"enabled": true, "serviceMonitor": {}}}));
    let list = request["controller"]["spec"]["childResources"]
        .as_array_mut()
        .expect("list");
    list.retain(|c| c["resource"] != "servicemonitors");
    let r = sync_value(&request);
    assert!(child(&r, "ServiceMonitor").is_none());
    assert_eq!(
        pod(&r)["containers"].as_array().map(Vec::len),
        Some(2),
        "the exporter still runs"
    );
    let c = condition(&r, "ChildResourcesMissing");
    assert_eq!(c["status"], "True");
    let message = c["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(
            "servicemonitors.monitoring.coreos.com (needed by spec.monitoring.serviceMonitor)"
        ),
        "{message}"
    );
}

#[test]
fn sasl_volumes_mounts_and_args() {
    let r = render(
        json!({"security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": "creds"}}}}),
    );
    assert_eq!(
        pod(&r)["volumes"],
        json!([{"name": "sasl-credentials", "secret": {"secretName": "creds",
        "items": [{"key": "password-file", "path": "password-file"}]}}])
    );
    let c = container(&r);
    assert_eq!(
        c["volumeMounts"],
        json!([{"name": "sasl-credentials", "mountPath": "/etc/memcached/sasl", "readOnly": true}])
    );
    assert_eq!(
        c["args"],
        json!([
            "-m",
            "64",
            "-c",
            "1024",
            "-t",
            "4",
            "-I",
            "1m",
            "-Y",
            "/etc/memcached/sasl/password-file"
        ])
    );
    let disabled = render(
        json!({"security": {"sasl": {"enabled": false, "credentialsSecretRef": {"name": "creds"}}}}),
    );
    assert!(pod(&disabled).get("volumes").is_none());
    assert_eq!(
        container(&disabled)["args"].as_array().map(Vec::len),
        Some(8)
    );
}

#[test]
fn tls_and_mtls() {
    let r = render(
        json!({"security": {"tls": {"enabled": true, "certificateSecretRef": {"name": "certs"}}}}),
    );
    assert_eq!(
        pod(&r)["volumes"],
        json!([{"name": "tls-certificates", "secret": {"secretName": "certs",
        "items": [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]}}])
    );
    let c = container(&r);
    assert_eq!(
        c["args"],
        json!([
            "-m",
            "64",
            "-c",
            "1024",
            "-t",
            "4",
            "-I",
            "1m",
            "-Z",
            "-o",
            "ssl_chain_cert=/etc/memcached/tls/tls.crt",
            "-o",
            "ssl_key=/etc/memcached/tls/tls.key",
            "-l",
            "notls:*:11211",
            "-l",
            "*:11212"
        ])
    );
    assert_eq!(
        c["ports"][1],
        json!({"name": "memcached-tls", "containerPort": 11212, "protocol": "TCP"})
    );
    assert_eq!(
        c["readinessProbe"]["tcpSocket"]["port"], "memcached",
        "probes stay on the plaintext port"
    );
    assert_eq!(
        must(&r, "Service")["spec"]["ports"][1],
        json!({"name": "memcached-tls", "port": 11212, "targetPort": "memcached-tls", "protocol": "TCP"})
    );
    let m = render(
        json!({"security": {"tls": {"enabled": true, "enableClientCert": true, "certificateSecretRef": {"name": "certs"}}}}),
    );
    assert_eq!(
        pod(&m)["volumes"][0]["secret"]["items"][2],
        json!({"key": "ca.crt", "path": "ca.crt"})
    );
    let args: Vec<String> = serde_json::from_value(container(&m)["args"].clone()).expect("args");
    let tail: Vec<&str> = args[8..].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "-Z",
            "-o",
            "ssl_chain_cert=/etc/memcached/tls/tls.crt",
            "-o",
            "ssl_key=/etc/memcached/tls/tls.key",
            "-o",
            "ssl_ca_cert=/etc/memcached/tls/ca.crt",
            "-o",
            "ssl_verify_mode=2",
            "-l",
            "notls:*:11211",
            "-l",
            "*:11212"
        ]
    );
}

#[test]
fn kitchen_sink_argument_order() {
    let r = render(
        json!({"memcached": {"maxMemoryMB": 256, "maxConnections": 2048, "threads": 8, "maxItemSize": "2m",
                                        "verbosity": 2, "extraArgs": ["--max-reqs-per-event", "20"]},
                          "security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": "s"}},
                                       "tls": {"enabled": true, "enableClientCert": true, "certificateSecretRef": {"name": "s"}}}}),
    );
    assert_eq!(
        container(&r)["args"],
        json!([
            "-m",
            "256",
            "-c",
            "2048",
            "-t",
            "8",
            "-I",
            "2m",
            "-vv",
            "-Y",
            "/etc/memcached/sasl/password-file",
            "-Z",
            "-o",
            "ssl_chain_cert=/etc/memcached/tls/tls.crt",
            "-o",
            "ssl_key=/etc/memcached/tls/tls.key",
            "-o",
            "ssl_ca_cert=/etc/memcached/tls/ca.crt",
            "-o",
            "ssl_verify_mode=2",
            "-l",
            "notls:*:11211",
            "-l",
            "*:11212",
            "--max-reqs-per-event",
            "20"
        ])
    );
    let volumes: Vec<&str> = pod(&r)["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(
        volumes,
        ["sasl-credentials", "tls-certificates"],
        "the same Secret backs both volumes"
    );
}

#[test]
fn secret_hash_and_missing_secrets() {
    let secret = |name: &str, data: Value| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"}, "data": data});
    let mut request = request_json(
        json!({"security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": "sasl-secret"}}}}),
    );
    request["related"] = json!({"Secret.v1": {"sasl-secret": secret("sasl-secret", json!({"password-file": "cHc="}))}});
    let r = sync_value(&request);
    assert_eq!(
        must(&r, "Deployment")["spec"]["template"]["metadata"]["annotations"]["memcached.c5c3.io/secret-hash"],
        "5c079a91d0bde60e232cb94cb2aa76a1543ee9448537f25ba81f555938656bac"
    );
    assert_ne!(condition(&r, "Degraded")["reason"], "SecretNotFound");
    request["related"] = json!({});
    let missing = sync_value(&request);
    assert!(
        must(&missing, "Deployment")["spec"]["template"]["metadata"]
            .get("annotations")
            .is_none()
    );
    assert!(
        child(&missing, "Deployment").is_some(),
        "volumes are emitted even when the Secret is missing"
    );
    let degraded = condition(&missing, "Degraded");
    assert_eq!(
        (degraded["reason"].as_str(), degraded["message"].as_str()),
        (
            Some("SecretNotFound"),
            Some("Referenced Secrets not found: sasl-secret")
        )
    );
}

#[test]
fn network_policy() {
    let r = render(json!({"security": {"networkPolicy": {"enabled": true}}}));
    let np = must(&r, "NetworkPolicy");
    assert_eq!(
        np["spec"],
        json!({
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "my-cache",
                                        "app.kubernetes.io/managed-by": "memcached-operator"}},
        "policyTypes": ["Ingress"],
        "ingress": [{"ports": [{"protocol": "TCP", "port": 11211}]}]})
    );
    let sources = json!([{"namespaceSelector": {"matchLabels": {"team": "a"}}, "podSelector": {"matchLabels": {"app": "web"}}},
                         {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]);
    let all = render(json!({"monitoring": {"enabled": true},
        "security": {"networkPolicy": {"enabled": true, "allowedSources": sources},
                     "tls": {"enabled": true, "certificateSecretRef": {"name": "c"}}}}));
    let rule = &must(&all, "NetworkPolicy")["spec"]["ingress"][0];
    assert_eq!(
        rule["ports"],
        json!([{"protocol": "TCP", "port": 11211}, {"protocol": "TCP", "port": 11212}, {"protocol": "TCP", "port": 9150}])
    );
    assert_eq!(rule["from"], sources);
    assert!(
        child(
            &render(json!({"security": {"networkPolicy": {"enabled": false}}})),
            "NetworkPolicy"
        )
        .is_none()
    );
}

#[test]
fn autoscaling() {
    let spec = json!({"resources": {"requests": {"cpu": "100m"}}, "autoscaling": {"enabled": true, "maxReplicas": 5}});
    let r = render(spec.clone());
    assert!(
        must(&r, "Deployment")["spec"].get("replicas").is_none(),
        "absent on the first create"
    );
    assert_eq!(
        must(&r, "HorizontalPodAutoscaler")["spec"],
        json!({
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "my-cache"},
        "maxReplicas": 5,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}})
    );
    let metrics = json!([{"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1024Mi"}}}]);
    let behavior = json!({"scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}});
    let custom = render(
        json!({"autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 9, "metrics": metrics, "behavior": behavior}}),
    );
    let hpa = &must(&custom, "HorizontalPodAutoscaler")["spec"];
    assert_eq!(hpa["minReplicas"], 2);
    assert_eq!(
        hpa["metrics"][0]["resource"]["target"]["averageValue"], "1Gi",
        "canonical quantity"
    );
    assert_eq!(hpa["behavior"], behavior);
    assert!(
        child(
            &render(json!({"autoscaling": {"enabled": false, "maxReplicas": 3}})),
            "HorizontalPodAutoscaler"
        )
        .is_none()
    );
    let available = condition(&r, "Available");
    assert!(
        available["message"]
            .as_str()
            .unwrap_or_default()
            .ends_with("(HPA-managed)")
    );
}

#[test]
fn autoscaling_keeps_the_observed_replicas() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sync/autoscaling-handover.json"
    );
    let request: Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    let observed = request["children"]["Deployment.apps/v1"]["cache"]["spec"]["replicas"].clone();
    let r = sync_value(&request);
    assert_eq!(
        must(&r, "Deployment")["spec"]["replicas"],
        observed,
        "no dip to 1 at the hand-over"
    );
}

#[test]
fn pdb_blocking_under_autoscaling_uses_min_replicas() {
    let r = render(json!({"resources": {"requests": {"cpu": "1"}},
        "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 5},
        "highAvailability": {"podDisruptionBudget": {"enabled": true, "minAvailable": 2}}}));
    let c = condition(&r, "DisruptionBudgetBlocking");
    assert_eq!(c["status"], "True");
    assert!(
        c["message"]
            .as_str()
            .unwrap_or_default()
            .contains("at 2 replicas")
    );
}
