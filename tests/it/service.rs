//! `spec.service`: the headless Service, and what the status tells clients about it.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::common::{base_labels, decoded, must, render, typed};

#[test]
fn headless_service() {
    let r = render(json!({}));
    assert_eq!(must(&r, "Service")["apiVersion"], "v1");
    let svc: Service = typed(&r);
    assert_eq!(svc.metadata.name.as_deref(), Some("my-cache"));
    // Only clusterIP, selector and ports: no type, no other field.
    assert_eq!(
        svc.spec,
        Some(ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            selector: Some(base_labels("my-cache")),
            ports: Some(vec![ServicePort {
                name: Some("memcached".to_owned()),
                port: 11211,
                target_port: Some(IntOrString::String("memcached".to_owned())),
                protocol: Some("TCP".to_owned()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        })
    );
}

#[test]
fn publish_not_ready_addresses_only_when_asked() {
    let publish = |spec: Value| {
        typed::<Service>(&render(spec))
            .spec
            .and_then(|s| s.publish_not_ready_addresses)
    };
    assert_eq!(publish(json!({})), None, "absent: Kubernetes' false");
    let off = json!({"service": {"publishNotReadyAddresses": false}});
    assert_eq!(publish(off), None);
    let on = json!({"service": {"publishNotReadyAddresses": true}});
    assert_eq!(publish(on), Some(true));
}

#[test]
fn status_names_the_srv_record_and_what_tls_clients_verify() {
    let status = |spec: Value| crate::common::status(&render(spec));
    let plain = status(json!({}));
    assert_eq!(
        plain.srv_name.as_deref(),
        Some("_memcached._tcp.my-cache.default.svc")
    );
    assert_eq!(plain.tls_server_names, None);
    let tls = json!({"enabled": true, "certificateSecretRef": {"name": "certs"}});
    let deployment = status(json!({"security": {"tls": tls}}));
    assert_eq!(
        deployment.srv_name.as_deref(),
        Some("_memcached._tcp.my-cache.default.svc")
    );
    assert_eq!(
        deployment.tls_server_names,
        Some(vec![
            "my-cache.default".to_owned(),
            "my-cache.default.svc".to_owned()
        ])
    );
    let statefulset = json!({"workload": "StatefulSet", "security": {"tls": tls}});
    let undeclared = status(statefulset.clone());
    assert_eq!(
        undeclared.tls_server_names, deployment.tls_server_names,
        "statefulsets not declared: the Deployment keeps serving"
    );
    let mut request = crate::common::request_json(statefulset);
    request["controller"]["spec"]["childResources"]
        .as_array_mut()
        .expect("childResources")
        .push(json!({"apiVersion": "apps/v1", "resource": "statefulsets"}));
    request["children"]["StatefulSet.apps/v1"] = json!({});
    let pods = crate::common::status(&crate::common::sync_value(&request));
    assert_eq!(
        pods.tls_server_names,
        Some(vec!["*.my-cache.default.svc".to_owned()])
    );
    let mut open = tls.clone();
    open["allowPlaintext"] = json!(true);
    let dual = status(json!({"security": {"tls": open}}));
    assert_eq!(
        dual.srv_name.as_deref(),
        Some("_memcached-tls._tcp.my-cache.default.svc")
    );
}

#[test]
fn service_annotations_table() {
    let annotations = |spec: Value| typed::<Service>(&render(spec)).metadata.annotations;
    assert_eq!(annotations(json!({})), None, "spec.service absent");
    assert_eq!(
        annotations(json!({"service": null})),
        None,
        "spec.service null"
    );
    assert_eq!(
        annotations(json!({"service": {}})),
        None,
        "spec.service without annotations"
    );
    assert_eq!(
        annotations(json!({"service": {"annotations": {}}})),
        None,
        "annotations empty"
    );
    let set = json!({"prometheus.io/scrape": "true", "prometheus.io/port": "11211"});
    assert_eq!(
        annotations(json!({"service": {"annotations": set.clone()}})),
        Some(decoded(set)),
        "exact copy"
    );
}
