//! `spec.security`: SASL, TLS, the NetworkPolicy, the Secret hash and the reload agent.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, ContainerPort, KeyToPath, ServicePort};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyIngressRule};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::common::{
    child, condition, map, memcached, overlaid, pod_spec, render, request_json,
    restricted_container, restricted_pod, service_ports, status, strict, sync_value, typed, words,
};

/// The first ingress rule of a response's NetworkPolicy.
fn ingress(r: &Value) -> NetworkPolicyIngressRule {
    let spec = typed::<NetworkPolicy>(r).spec.expect("spec");
    spec.ingress.expect("ingress").remove(0)
}

/// The names of the init containers of a response's Deployment (none: empty).
fn init_names(r: &Value) -> Vec<String> {
    let init = pod_spec(r).init_containers.unwrap_or_default();
    init.into_iter().map(|c| c.name).collect()
}

/// The pod-template annotations of a response's Deployment.
fn template_annotations(r: &Value) -> Option<BTreeMap<String, String>> {
    let template = typed::<Deployment>(r).spec.expect("spec").template;
    template.metadata.expect("metadata").annotations
}

#[test]
fn sasl_volumes_mounts_and_args() {
    let r = render(
        json!({"security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": "creds"}}}}),
    );
    let pod = pod_spec(&r);
    assert_eq!(
        pod.volumes,
        Some(strict(
            &json!([{"name": "sasl-credentials", "secret": {"secretName": "creds",
        "items": [{"key": "password-file", "path": "password-file"}]}},
        {"name": "sasl-auth-file", "emptyDir": {"medium": "Memory", "sizeLimit": "64Ki"}}])
        ))
    );
    let c = &pod.containers[0];
    // memcached reads only the normalised copy; the init step writes it from the Secret.
    assert_eq!(
        c.volume_mounts,
        Some(strict(
            &json!([{"name": "sasl-auth-file", "mountPath": "/run/memcached/sasl", "readOnly": true}])
        ))
    );
    assert_eq!(
        pod.init_containers.as_deref().expect("init containers")[0],
        strict::<Container>(
            &json!({"name": "auth-file", "image": memcached_hook::children::own_image::DEFAULT_IMAGE,
               "command": ["/memcached-hook"],
               "args": ["auth-file", "--from", "/etc/memcached/sasl/password-file",
                        "--to", "/run/memcached/sasl/password-file"],
               "resources": {"limits": {"memory": "64Mi"}, "requests": {"cpu": "10m", "memory": "16Mi"}},
               "securityContext": restricted_container(),
               "terminationMessagePolicy": "FallbackToLogsOnError",
               "volumeMounts": [
                   {"name": "sasl-credentials", "mountPath": "/etc/memcached/sasl", "readOnly": true},
                   {"name": "sasl-auth-file", "mountPath": "/run/memcached/sasl"}]})
        )
    );
    assert_eq!(
        c.args.as_deref().expect("args"),
        words("-m 64 -c 1024 -t 4 -I 1m -Y /run/memcached/sasl/password-file -X -W")
    );
    let disabled = render(
        json!({"security": {"sasl": {"enabled": false, "credentialsSecretRef": {"name": "creds"}}}}),
    );
    assert!(pod_spec(&disabled).volumes.is_none());
    assert_eq!(memcached(&disabled).args.expect("args").len(), 10);
}

#[test]
fn tls_and_mtls() {
    let r = render(
        json!({"security": {"tls": {"enabled": true, "certificateSecretRef": {"name": "certs"}}}}),
    );
    assert_eq!(
        pod_spec(&r).volumes,
        Some(strict(
            &json!([{"name": "tls-certificates", "secret": {"secretName": "certs",
        "items": [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]}}])
        ))
    );
    let c = memcached(&r);
    assert_eq!(
        c.args.as_deref().expect("args"),
        words(
            "-m 64 -c 1024 -t 4 -I 1m -Z \
             -o ssl_chain_cert=/etc/memcached/tls/tls.crt \
             -o ssl_key=/etc/memcached/tls/tls.key -o ssl_min_version=2 -l *:11211 \
             -l *:11212 -l notls:127.0.0.1:11213 -X -W"
        )
    );
    assert_eq!(
        c.ports.as_deref().expect("ports")[1],
        strict::<ContainerPort>(
            &json!({"name": "memcached-tls", "containerPort": 11212, "protocol": "TCP"})
        )
    );
    let readiness = c
        .readiness_probe
        .and_then(|p| p.tcp_socket)
        .expect("a TCP readiness probe");
    assert_eq!(
        readiness.port,
        IntOrString::String("memcached".to_owned()),
        "probes connect to the main port (a TCP connect works on the TLS listener)"
    );
    assert_eq!(
        service_ports(&r)[1],
        strict::<ServicePort>(
            &json!({"name": "memcached-tls", "port": 11212, "targetPort": "memcached-tls", "protocol": "TCP"})
        )
    );
    let m = render(
        json!({"security": {"tls": {"enabled": true, "enableClientCert": true, "certificateSecretRef": {"name": "certs"}}}}),
    );
    let volumes = pod_spec(&m).volumes.expect("volumes");
    let items = volumes[0].secret.as_ref().and_then(|s| s.items.as_deref());
    assert_eq!(
        items.expect("secret items")[2],
        strict::<KeyToPath>(&json!({"key": "ca.crt", "path": "ca.crt"}))
    );
    let args = memcached(&m).args.expect("args");
    let tail: Vec<&str> = args[8..].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        words(
            "-Z -o ssl_chain_cert=/etc/memcached/tls/tls.crt \
             -o ssl_key=/etc/memcached/tls/tls.key -o ssl_min_version=2 \
             -o ssl_ca_cert=/etc/memcached/tls/ca.crt -o ssl_verify_mode=2 \
             -l *:11211 -l *:11212 -l notls:127.0.0.1:11213 -X -W"
        )
    );
}

#[test]
fn secret_hash_and_missing_secrets() {
    let secret = |name: &str, data: Value| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"}, "data": data});
    // RollingRestart: the reference's hash of every key (its test vector).
    let mut request = request_json(json!({"security": {"secretRotation": "RollingRestart",
                            "sasl": {"enabled": true, "credentialsSecretRef": {"name": "sasl-secret"}}}}));
    request["related"] = json!({"Secret.v1": {"sasl-secret": secret("sasl-secret", json!({"password-file": "cHc="}))}});
    let r = sync_value(&request);
    assert_eq!(
        template_annotations(&r),
        Some(map(&[(
            "memcached.c5c3.io/secret-hash",
            "5c079a91d0bde60e232cb94cb2aa76a1543ee9448537f25ba81f555938656bac"
        )]))
    );
    assert_ne!(condition(&r, "Degraded").reason, "SecretNotFound");
    request["related"] = json!({});
    let missing = sync_value(&request);
    assert_eq!(template_annotations(&missing), None);
    assert!(
        child(&missing, "Deployment").is_some(),
        "volumes are emitted even when the Secret is missing"
    );
    let degraded = condition(&missing, "Degraded");
    assert_eq!(
        (degraded.reason.as_str(), degraded.message.as_str()),
        (
            "SecretNotFound",
            "Referenced Secrets not found: sasl-secret"
        )
    );
}

#[test]
fn network_policy() {
    let r = render(json!({"security": {"networkPolicy": {"enabled": true}}}));
    assert_eq!(
        typed::<NetworkPolicy>(&r).spec,
        Some(strict(&json!({
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "my-cache",
                                        "app.kubernetes.io/managed-by": "memcached-operator"}},
        "policyTypes": ["Ingress"],
        "ingress": [{"ports": [{"protocol": "TCP", "port": 11211}]}]})))
    );
    let sources = json!([{"namespaceSelector": {"matchLabels": {"team": "a"}}, "podSelector": {"matchLabels": {"app": "web"}}},
                         {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]);
    let all = render(json!({"monitoring": {"enabled": true},
        "security": {"networkPolicy": {"enabled": true, "allowedSources": sources},
                     "tls": {"enabled": true, "certificateSecretRef": {"name": "c"}}}}));
    let rule = ingress(&all);
    assert_eq!(
        rule.ports,
        Some(strict(
            &json!([{"protocol": "TCP", "port": 11211}, {"protocol": "TCP", "port": 11212}, {"protocol": "TCP", "port": 9150}])
        ))
    );
    assert_eq!(rule.from, Some(strict(&sources)));
    assert!(
        child(
            &render(json!({"security": {"networkPolicy": {"enabled": false}}})),
            "NetworkPolicy"
        )
        .is_none()
    );
}

/// TLS without `allowPlaintext` leaves no plaintext port reachable from outside the
/// pod; `allowPlaintext: true` is the dual-port layout.
#[test]
fn tls_only_by_default_and_allow_plaintext() {
    let spec = |allow: Option<bool>| {
        let mut tls = json!({"enabled": true, "certificateSecretRef": {"name": "certs"}});
        if let Some(a) = allow {
            tls["allowPlaintext"] = json!(a);
        }
        json!({"monitoring": {"enabled": true},
               "security": {"tls": tls, "networkPolicy": {"enabled": true}}})
    };
    let locked = render(spec(None));
    assert_eq!(render(spec(Some(false))), locked, "false is the default");
    let args = memcached(&locked).args.expect("args");
    assert_eq!(
        args[args.len() - 8..args.len() - 2],
        [
            "-l",
            "*:11211",
            "-l",
            "*:11212",
            "-l",
            "notls:127.0.0.1:11213"
        ]
    );
    // The loopback listener is no container, Service or NetworkPolicy port.
    let container_ports: Vec<i32> = (memcached(&locked).ports.expect("ports").iter())
        .map(|p| p.container_port)
        .collect();
    assert_eq!(container_ports, [11211, 11212]);
    let service: Vec<i32> = service_ports(&locked).iter().map(|p| p.port).collect();
    assert_eq!(service, [11211, 11212, 9150]);
    let allowed: Vec<IntOrString> = (ingress(&locked).ports.expect("ports").into_iter())
        .filter_map(|p| p.port)
        .collect();
    assert_eq!(
        allowed,
        [11211, 11212, 9150].map(IntOrString::Int),
        "numbered ports"
    );
    assert_eq!(
        pod_spec(&locked).containers[1].args.as_deref(),
        Some(&["--memcached.address=127.0.0.1:11213".to_owned()][..]),
        "the exporter reads the loopback listener"
    );
    let open = render(spec(Some(true)));
    let args = memcached(&open).args.expect("args");
    assert_eq!(
        args[args.len() - 6..args.len() - 2],
        ["-l", "notls:*:11211", "-l", "*:11212"]
    );
    assert!(pod_spec(&open).containers[1].args.is_none());
}

#[test]
fn server_list_names_the_tls_port_clients_use() {
    let ready = |spec: Value| {
        let mut request = request_json(spec);
        request["children"] = json!({"Deployment.apps/v1": {"my-cache": {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "my-cache", "namespace": "default"},
            "spec": {"replicas": 1},
            "status": {"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1}}}});
        status(&sync_value(&request)).server_list
    };
    let tls = |allow: bool| {
        json!({"security": {"tls": {"enabled": true, "allowPlaintext": allow,
                                                      "certificateSecretRef": {"name": "c"}}}})
    };
    let list = |server: &str| Some(vec![server.to_owned()]);
    assert_eq!(ready(json!({})), list("my-cache.default:11211"));
    assert_eq!(ready(tls(false)), list("my-cache.default:11211"));
    assert_eq!(ready(tls(true)), list("my-cache.default:11212"));
}

/// Under `secretRotation: Reload` (the default) a reload-agent native sidecar from the
/// hook's image watches the mounted Secrets; with SASL it shares memcached's process namespace.
#[test]
fn reload_agent_with_sasl_and_tls() {
    let r = render(json!({"security": {
        "sasl": {"enabled": true, "credentialsSecretRef": {"name": "s"}},
        "tls": {"enabled": true, "enableClientCert": true, "certificateSecretRef": {"name": "t"}}}}));
    let typed_pod = pod_spec(&r);
    assert_eq!(typed_pod.share_process_namespace, Some(true));
    let typed_agent = &typed_pod
        .init_containers
        .as_deref()
        .expect("init containers")[1];
    assert_eq!(typed_agent.name, "reload-agent");
    assert_eq!(typed_agent.restart_policy.as_deref(), Some("Always"));
    assert_eq!(
        typed_agent.image.as_deref(),
        Some(concat!(
            "registry.example.com/memcached-hook:",
            env!("CARGO_PKG_VERSION")
        ))
    );
    assert_eq!(
        typed_agent.command,
        Some(vec!["/memcached-hook".to_owned()])
    );
    let init = typed_pod
        .init_containers
        .as_deref()
        .expect("init containers");
    assert_eq!(init[0].name, "auth-file", "the copy is written first");
    assert_eq!(
        typed_agent.args.as_deref().expect("args"),
        words(
            "reload-agent --tls-cert /etc/memcached/tls/tls.crt \
             --tls-key /etc/memcached/tls/tls.key \
             --tls-ca /etc/memcached/tls/ca.crt \
             --auth-file /etc/memcached/sasl/password-file \
             --auth-copy /run/memcached/sasl/password-file \
             --admin-addr 127.0.0.1:11213"
        )
    );
    assert_eq!(
        typed_agent.volume_mounts,
        Some(strict(&json!([
            {"name": "sasl-credentials", "mountPath": "/etc/memcached/sasl", "readOnly": true},
            {"name": "sasl-auth-file", "mountPath": "/run/memcached/sasl"},
            {"name": "tls-certificates", "mountPath": "/etc/memcached/tls", "readOnly": true}
        ])))
    );
    // The agent signals memcached: it runs as the pod's user, memcached's.
    assert_eq!(
        typed_agent.security_context,
        Some(strict(&restricted_container()))
    );
    assert_eq!(typed_pod.security_context, Some(strict(&restricted_pod())));
}

#[test]
fn reload_agent_with_tls_only() {
    // no signal, no shared process namespace, the user's fields over the defaults.
    let tls = render(
        json!({"security": {"containerSecurityContext": {"runAsNonRoot": true},
        "tls": {"enabled": true, "allowPlaintext": true, "certificateSecretRef": {"name": "t"}}}}),
    );
    let tls_pod = pod_spec(&tls);
    assert!(tls_pod.share_process_namespace.is_none());
    let agent = &tls_pod.init_containers.as_deref().expect("init containers")[0];
    assert_eq!(
        agent.security_context,
        Some(strict(&overlaid(
            restricted_container(),
            &json!({"runAsNonRoot": true})
        )))
    );
    assert_eq!(
        agent.args.as_deref().expect("args"),
        [
            "reload-agent",
            "--tls-cert",
            "/etc/memcached/tls/tls.crt",
            "--tls-key",
            "/etc/memcached/tls/tls.key",
            "--admin-addr",
            "127.0.0.1:11211"
        ]
    );
}

#[test]
fn secret_reload_names_a_placeholder_agent_image() {
    let r = render(json!({"security": {
        "sasl": {"enabled": true, "credentialsSecretRef": {"name": "s"}},
        "tls": {"enabled": true, "enableClientCert": true, "certificateSecretRef": {"name": "t"}}}}));
    // The hook's reload-agent image is still the placeholder: the children are rendered, and
    // the status names the placeholder and the flag that replaces it.
    let placeholder = condition(&r, "SecretReload");
    assert_eq!(
        (placeholder.status.as_str(), placeholder.reason.as_str()),
        ("False", "AgentImagePlaceholder")
    );
    assert!(
        placeholder
            .message
            .contains("registry.example.com/memcached-hook:")
            && placeholder.message.contains("--reload-agent-image"),
        "{}",
        placeholder.message
    );
    let real = memcached_hook::Options {
        reload_agent_image: "ghcr.io/corp/memcached-hook:0.1.0".into(),
        ..memcached_hook::Options::default()
    };
    let tls_request = crate::common::request_json(json!({"security": {
        "containerSecurityContext": {"runAsNonRoot": true},
        "tls": {"enabled": true, "allowPlaintext": true, "certificateSecretRef": {"name": "t"}}}}));
    let with_real = crate::common::sync_with(&tls_request, &real);
    assert_eq!(condition(&with_real, "SecretReload").reason, "InPlace");
    assert_eq!(
        pod_spec(&with_real)
            .init_containers
            .as_deref()
            .expect("init containers")[0]
            .image
            .as_deref(),
        Some("ghcr.io/corp/memcached-hook:0.1.0")
    );
}

#[test]
fn a_memcached_too_old_to_reload_rolls_instead() {
    // A memcached too old for the reload: the pods roll, and the status says why.
    let old = render(json!({"image": "memcached:1.5.12", "security": {
        "sasl": {"enabled": true, "credentialsSecretRef": {"name": "s"}}}}));
    assert_eq!(
        init_names(&old),
        ["auth-file"],
        "no agent; the auth file copy is still written"
    );
    let c = condition(&old, "SecretReload");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "MemcachedTooOld")
    );
    assert!(child(&render(json!({})), "Deployment").is_some());
    assert!(
        status(&render(json!({})))
            .conditions
            .expect("conditions")
            .iter()
            .all(|c| c.type_ != "SecretReload"),
        "no condition without SASL and TLS"
    );
}

#[test]
fn no_agent_without_reload() {
    // RollingRestart, or nothing to rotate: no agent.
    for spec in [
        json!({"security": {"secretRotation": "RollingRestart",
                            "sasl": {"enabled": true, "credentialsSecretRef": {"name": "s"}}}}),
        json!({"security": {"secretRotation": "Reload"}}),
    ] {
        let r = render(spec);
        let init = init_names(&r);
        assert!(!init.iter().any(|n| n == "reload-agent"), "{init:?}");
        assert!(pod_spec(&r).share_process_namespace.is_none());
    }
}

/// Under Reload the secret hash ignores the content the agent reloads (certificate, key, password
/// file) but not `ca.crt` with client certificates (memcached never drops a reloaded-away CA),
/// nor a mounted key appearing or going.
#[test]
fn reload_hash_covers_only_what_a_reload_cannot_apply() {
    let secret = |name: &str, data: Value| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"}, "data": data});
    let hash = |rotation: &str, data: Value| {
        let mut request = request_json(json!({"security": {"secretRotation": rotation,
            "tls": {"enabled": true, "enableClientCert": true, "certificateSecretRef": {"name": "t"}}}}));
        request["related"] = json!({"Secret.v1": {"t": secret("t", data)}});
        template_annotations(&sync_value(&request))
            .and_then(|mut a| a.remove("memcached.c5c3.io/secret-hash"))
    };
    let v1 = json!({"tls.crt": "YQ==", "tls.key": "Yg==", "ca.crt": "Yw==", "other": "eA=="});
    let renewed = json!({"tls.crt": "YTI=", "tls.key": "YjI=", "ca.crt": "Yw==", "other": "eTI="});
    let new_ca = json!({"tls.crt": "YQ==", "tls.key": "Yg==", "ca.crt": "YzI=", "other": "eA=="});
    let no_key = json!({"tls.crt": "YQ==", "ca.crt": "Yw=="});
    assert_eq!(hash("Reload", v1.clone()), hash("Reload", renewed.clone()));
    assert_ne!(hash("Reload", v1.clone()), hash("Reload", new_ca));
    assert_ne!(hash("Reload", v1.clone()), hash("Reload", no_key));
    assert_ne!(hash("RollingRestart", v1), hash("RollingRestart", renewed));
}

#[test]
fn sasl_refuses_the_binary_protocol_and_udp_in_extra_args_in_every_spelling() {
    let spec = |args: Value| {
        json!({"security": {"sasl": {"enabled": true, "credentialsSecretRef": {"name": "s"}}},
               "memcached": {"extraArgs": args}})
    };
    for (args, at, detail) in [
        (
            json!(["-B", "binary"]),
            1,
            "-B binary with spec.security.sasl.enabled",
        ),
        (
            json!(["-Bauto"]),
            0,
            "-B auto with spec.security.sasl.enabled",
        ),
        (
            json!(["--protocol=binary"]),
            0,
            "-B binary with spec.security.sasl.enabled",
        ),
        (json!(["-vS"]), 0, "-S with spec.security.sasl.enabled"),
        (
            json!(["--enable-sasl"]),
            0,
            "-S with spec.security.sasl.enabled",
        ),
        (
            json!(["-v", "-U11211"]),
            1,
            "UDP port 11211 with spec.security.sasl.enabled",
        ),
    ] {
        let shown = crate::extstore::refused(spec(args.clone()));
        assert_eq!(shown.len(), 1, "{args}: {shown:?}");
        let field = format!("spec.memcached.extraArgs[{at}]: Invalid value: ");
        assert!(
            shown[0].starts_with(&field) && shown[0].contains(detail),
            "{args}: {shown:?}"
        );
    }
    for args in [
        json!(["-B", "ascii"]),
        json!(["-U", "0"]),
        json!(["--", "-S"]),
    ] {
        assert_eq!(
            crate::extstore::refused(spec(args.clone())),
            Vec::<String>::new(),
            "{args}"
        );
    }
    // Without SASL memcached starts with each of them.
    for args in [
        json!(["-B", "binary"]),
        json!(["-S"]),
        json!(["-U", "11211"]),
    ] {
        let plain = json!({"memcached": {"extraArgs": args}});
        assert_eq!(
            crate::extstore::refused(plain),
            Vec::<String>::new(),
            "{args}"
        );
    }
}
