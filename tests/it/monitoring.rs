//! `spec.monitoring`: the exporter sidecar (or the stats exporter with SASL) and the ServiceMonitor.

use k8s_openapi::api::core::v1::{Container, ServicePort};
use serde_json::json;

use crate::common::{
    child, condition, decoded, map, overlaid, pod_spec, render, request_json, restricted_container,
    service_ports, strict, sync_value,
};
use crate::service_monitor::{self, Endpoint};

#[test]
fn exporter_sidecar_and_metrics_port() {
    let csc = json!({"runAsNonRoot": true});
    let r = render(
        json!({"monitoring": {"enabled": true, "exporterResources": {"limits": {"memory": "64Mi"}}},
                          "security": {"containerSecurityContext": csc}}),
    );
    let containers = pod_spec(&r).containers;
    assert_eq!(containers.len(), 2);
    // The whole container: nothing else is written.
    assert_eq!(
        containers[1],
        decoded::<Container>(
            json!({"name": "exporter", "image": "prom/memcached-exporter:v0.15.4",
            "ports": [{"name": "metrics", "containerPort": 9150, "protocol": "TCP"}],
            "resources": {"limits": {"memory": "64Mi"}},
            "securityContext": overlaid(restricted_container(), &csc)})
        )
    );
    let ports = service_ports(&r);
    assert_eq!(
        ports[1],
        decoded::<ServicePort>(
            json!({"name": "metrics", "port": 9150, "targetPort": "metrics", "protocol": "TCP"})
        )
    );
    let custom = render(json!({"monitoring": {"enabled": true, "exporterImage": "exporter:v1"}}));
    let image = pod_spec(&custom).containers[1].image.clone();
    assert_eq!(image.as_deref(), Some("exporter:v1"));
    let off = render(json!({"monitoring": {"enabled": false, "serviceMonitor": {}}}));
    assert_eq!(pod_spec(&off).containers.len(), 1);
    assert!(child(&off, "ServiceMonitor").is_none());
    assert_eq!(service_ports(&off).len(), 1);
}

/// With SASL memcached refuses `stats` to the Prometheus exporter (it cannot log in): the metrics
/// sidecar is the hook's own `stats-exporter`, logged in with memcached's copy of the auth file, on the same
/// `metrics` port; `exporterImage` is not used then.
#[test]
fn sasl_metrics_sidecar_is_the_stats_exporter() {
    let sasl = json!({"enabled": true, "credentialsSecretRef": {"name": "creds"}});
    let r = render(
        json!({"monitoring": {"enabled": true, "exporterImage": "exporter:v1"},
                          "security": {"sasl": sasl}}),
    );
    let containers = pod_spec(&r).containers;
    assert_eq!(
        containers[1],
        decoded::<Container>(json!({
            "name": "exporter",
            "image": memcached_hook::children::own_image::DEFAULT_IMAGE,
            "command": ["/memcached-hook"],
            "args": ["stats-exporter", "--auth-file", "/run/memcached/sasl/password-file",
                     "--memcached-addr", "127.0.0.1:11211"],
            "ports": [{"name": "metrics", "containerPort": 9150, "protocol": "TCP"}],
            "securityContext": restricted_container(),
            "volumeMounts": [{"name": "sasl-auth-file", "mountPath": "/run/memcached/sasl",
                              "readOnly": true}]
        }))
    );
    let tls = json!({"enabled": true, "certificateSecretRef": {"name": "certs"}});
    let locked = render(json!({"monitoring": {"enabled": true},
                               "security": {"sasl": sasl, "tls": tls}}));
    let args = pod_spec(&locked).containers[1].args.clone().expect("args");
    assert_eq!(
        args[4], "127.0.0.1:11213",
        "the loopback listener under TLS"
    );
}

#[test]
fn service_monitor() {
    let r = render(json!({"monitoring": {"enabled": true, "serviceMonitor": {
        "additionalLabels": {"release": "prom", "app.kubernetes.io/name": "override"}, "interval": "15s"}}}));
    let sm = service_monitor::of(&r);
    assert_eq!(sm.api_version, "monitoring.coreos.com/v1");
    assert_eq!(
        sm.metadata.labels,
        Some(map(&[
            ("release", "prom"),
            ("app.kubernetes.io/name", "memcached"),
            ("app.kubernetes.io/instance", "my-cache"),
            ("app.kubernetes.io/managed-by", "memcached-operator")
        ]))
    );
    assert_eq!(
        sm.spec,
        strict(&json!({
        "selector": {"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "my-cache",
                                     "app.kubernetes.io/managed-by": "memcached-operator"}},
        "namespaceSelector": {"matchNames": ["default"]},
        "endpoints": [{"port": "metrics", "interval": "15s", "scrapeTimeout": "10s"}]}))
    );
    let defaults = render(json!({"monitoring": {"enabled": true, "serviceMonitor": {}}}));
    assert_eq!(
        service_monitor::of(&defaults).spec.endpoints,
        [strict::<Endpoint>(
            &json!({"port": "metrics", "interval": "30s", "scrapeTimeout": "10s"})
        )]
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
    assert_eq!(pod_spec(&r).containers.len(), 2, "the exporter still runs");
    let c = condition(&r, "ChildResourcesMissing");
    assert_eq!(c.status, "True");
    assert!(
        c.message.contains(
            "servicemonitors.monitoring.coreos.com (needed by spec.monitoring.serviceMonitor)"
        ),
        "{}",
        c.message
    );
}
