//! `spec.replicas`, `spec.image`, `spec.resources` and `spec.memcached`: the workload, its memcached
//! container, the argument list and the memory request.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::core::v1::{ContainerPort, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::common::{
    assert_absent, map, memcached, pod_spec, render, request_json, restricted_container,
    restricted_pod, strict, sync_value, typed, words,
};

#[test]
fn deployment_replicas() {
    let replicas = |spec: Value| {
        typed::<Deployment>(&render(spec))
            .spec
            .expect("spec")
            .replicas
    };
    assert_eq!(replicas(json!({})), Some(1));
    assert_eq!(replicas(json!({"replicas": 0})), Some(0));
    assert_eq!(replicas(json!({"replicas": 5})), Some(5));
}

#[test]
fn deployment_strategy_and_container() {
    let r =
        render(json!({"image": "memcached:1.6.38", "resources": {"requests": {"cpu": "100m"}}}));
    let spec = typed::<Deployment>(&r).spec.expect("spec");
    assert_eq!(
        spec.strategy,
        Some(DeploymentStrategy {
            type_: Some("RollingUpdate".to_owned()),
            rolling_update: Some(RollingUpdateDeployment {
                max_surge: Some(IntOrString::Int(1)),
                max_unavailable: Some(IntOrString::Int(0)),
            }),
        })
    );
    let typed_container = memcached(&r);
    assert_eq!(typed_container.name, "memcached");
    assert_eq!(typed_container.image.as_deref(), Some("memcached:1.6.38"));
    assert_eq!(
        typed_container.ports,
        Some(vec![ContainerPort {
            name: Some("memcached".to_owned()),
            container_port: 11211,
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }])
    );
    // The probes and resources whole (the typed decoding is strict: no other field is written).
    let c = typed_container;
    assert_eq!(
        c.liveness_probe,
        Some(strict(
            &json!({"tcpSocket": {"port": "memcached"}, "initialDelaySeconds": 10, "periodSeconds": 10})
        ))
    );
    assert_eq!(
        c.readiness_probe,
        Some(strict(
            &json!({"tcpSocket": {"port": "memcached"}, "initialDelaySeconds": 5, "periodSeconds": 5})
        ))
    );
    // No memory in `resources`: maxMemoryMB 64 + 8 + 1024/64 + 64/64 MiB.
    assert_eq!(
        c.resources,
        Some(strict(
            &json!({"requests": {"cpu": "100m", "memory": "89Mi"}})
        ))
    );
    assert_absent(&[
        ("command", c.command.is_none()),
        ("env", c.env.is_none()),
        ("envFrom", c.env_from.is_none()),
        ("startupProbe", c.startup_probe.is_none()),
        ("imagePullPolicy", c.image_pull_policy.is_none()),
        ("lifecycle", c.lifecycle.is_none()),
        ("volumeMounts", c.volume_mounts.is_none()),
    ]);
    assert_eq!(c.security_context, Some(strict(&restricted_container())));
    let template = spec.template;
    assert_eq!(template.metadata.expect("metadata").annotations, None);
    let typed_pod = template.spec.expect("pod spec");
    assert_absent(&[
        ("affinity", typed_pod.affinity.is_none()),
        (
            "topologySpreadConstraints",
            typed_pod.topology_spread_constraints.is_none(),
        ),
        (
            "terminationGracePeriodSeconds",
            typed_pod.termination_grace_period_seconds.is_none(),
        ),
        ("volumes", typed_pod.volumes.is_none()),
    ]);
    assert_eq!(typed_pod.security_context, Some(strict(&restricted_pod())));
    assert_eq!(typed_pod.containers.len(), 1);
    assert_eq!(
        typed_pod.automount_service_account_token,
        Some(false),
        "memcached needs no API token"
    );
}

#[test]
fn image_defaults_and_resources_are_written_canonically() {
    let r = render(
        json!({"resources": {"limits": {"memory": "1024Mi", "cpu": "1000m"}, "requests": {"memory": "0.5Gi", "cpu": "0.25"}}}),
    );
    let c = memcached(&r);
    assert_eq!(c.image.as_deref(), Some("memcached:1.6.45"));
    assert_eq!(
        c.resources,
        Some(strict(
            &json!({"limits": {"memory": "1Gi", "cpu": "1"}, "requests": {"memory": "512Mi", "cpu": "250m"}})
        ))
    );
}

#[test]
fn argument_list_follows_the_reference_order() {
    let args = |spec: Value| memcached(&render(spec)).args.expect("args");
    assert_eq!(
        args(json!({})),
        ["-m", "64", "-c", "1024", "-t", "4", "-I", "1m", "-X", "-W"]
    );
    let all = render(
        json!({"memcached": {"maxMemoryMB": 256, "maxConnections": 2048, "threads": 8, "maxItemSize": "2m",
                                          "verbosity": 2, "extraArgs": ["--max-reqs-per-event", "20"]}}),
    );
    assert_eq!(
        memcached(&all).args.expect("args"),
        words("-m 256 -c 2048 -t 8 -I 2m -vv -X -W --max-reqs-per-event 20")
    );
    let zeros = json!({"memcached": {"maxMemoryMB": 0, "maxConnections": 0, "threads": 0, "maxItemSize": "", "verbosity": 1}});
    assert_eq!(
        args(zeros),
        [
            "-m", "64", "-c", "1024", "-t", "4", "-I", "1m", "-v", "-X", "-W"
        ]
    );
}

#[test]
fn restart_trigger_is_copied_to_the_pod_template() {
    let mut request = request_json(json!({}));
    request["parent"]["metadata"]["annotations"] =
        json!({"memcached.c5c3.io/restart-trigger": "now-1"});
    let annotations = |request: &Value| {
        let template = typed::<Deployment>(&sync_value(request))
            .spec
            .expect("spec")
            .template;
        template.metadata.expect("metadata").annotations
    };
    assert_eq!(
        annotations(&request),
        Some(map(&[("memcached.c5c3.io/restart-trigger", "now-1")]))
    );
    request["parent"]["metadata"]["annotations"] = json!({"memcached.c5c3.io/restart-trigger": ""});
    assert_eq!(annotations(&request), None);
}

#[test]
fn the_memory_request_follows_max_memory_and_connections_and_never_a_limit() {
    let resources = |spec: Value| memcached(&render(spec)).resources;
    let want = |json: Value| Some(strict::<ResourceRequirements>(&json));
    assert_eq!(
        resources(json!({})),
        want(json!({"requests": {"memory": "89Mi"}}))
    );
    assert_eq!(
        resources(json!({"memcached": {"maxMemoryMB": 1024, "maxConnections": 4096}})),
        want(json!({"requests": {"memory": "1112Mi"}}))
    );
    // The user's memory request stands; a limit alone makes the API server request it.
    assert_eq!(
        resources(json!({"resources": {"requests": {"memory": "100Mi"}}})),
        want(json!({"requests": {"memory": "100Mi"}}))
    );
    assert_eq!(
        resources(json!({"resources": {"limits": {"memory": "200Mi"}}})),
        want(json!({"limits": {"memory": "200Mi"}}))
    );
    // The exporter gets none.
    let r = render(json!({"monitoring": {"enabled": true}}));
    let exporter = &pod_spec(&r).containers[1];
    assert!(exporter.resources.is_none(), "{exporter:?}");
}

#[test]
fn the_memory_request_follows_memory_and_connections_in_extra_args_in_every_spelling() {
    let resources =
        |args: Value| memcached(&render(json!({"memcached": {"extraArgs": args}}))).resources;
    let want = |mib: i64| {
        Some(strict::<ResourceRequirements>(
            &json!({"requests": {"memory": format!("{mib}Mi")}}),
        ))
    };
    // memcached keeps the last -m and -c: 2048 MB and 1024 connections.
    let expected = 2048 + 8 + 16 + 32;
    for args in [
        json!(["-m", "2048"]),
        json!(["-m2048"]),
        json!(["-vm2048"]),
        json!(["-vm", "2048"]),
        json!(["--memory-limit=2048"]),
        json!(["--memory-limit", "2048"]),
        json!(["--memory-l=2048"]),
        json!(["-m", "100", "-m2048"]),
    ] {
        assert_eq!(resources(args.clone()), want(expected), "{args}");
    }
    assert_eq!(
        resources(json!(["-c4096", "-m", "1024"])),
        want(1024 + 8 + 64 + 16)
    );
    // After `--` memcached reads nothing: the request is the default's.
    assert_eq!(resources(json!(["--", "-m2048"])), want(89));
}

#[test]
fn a_memory_request_of_exactly_a_gibibyte_is_written_as_the_api_server_stores_it() {
    let resources =
        |mb: i64| memcached(&render(json!({"memcached": {"maxMemoryMB": mb}}))).resources;
    let want = |q: &str| {
        Some(strict::<ResourceRequirements>(
            &json!({"requests": {"memory": q}}),
        ))
    };
    // 984 + 8 + 16 + 16 = 1024 MiB; 2008 + 8 + 16 + 32 = 2064 MiB.
    assert_eq!(resources(984), want("1Gi"));
    assert_eq!(resources(985), want("1025Mi"));
    assert_eq!(resources(2008), want("2064Mi"));
}

#[test]
fn extra_args_memcached_would_refuse_are_refused() {
    for (args, shown) in [
        (
            json!(["-m99999999"]),
            "spec.memcached.extraArgs[0]: Invalid value: \"-m99999999\": -m must be a whole number from 16 to 65536, as maxMemoryMB",
        ),
        (
            json!(["-v", "-m", "lots"]),
            "spec.memcached.extraArgs[2]: Invalid value: \"lots\": -m must be a whole number from 16 to 65536, as maxMemoryMB",
        ),
        (
            json!(["--conn-limit=0"]),
            "spec.memcached.extraArgs[0]: Invalid value: \"--conn-limit=0\": -c must be a whole number from 1 to 65536, as maxConnections",
        ),
        (
            json!(["-I", "2g"]),
            "spec.memcached.extraArgs[1]: Invalid value: \"2g\": -I must be a size in bytes, or a number followed by k or m",
        ),
        (
            json!(["-Bbinary2"]),
            "spec.memcached.extraArgs[0]: Invalid value: \"-Bbinary2\": -B must be auto, binary or ascii: memcached would exit",
        ),
        (
            json!(["-vq"]),
            "spec.memcached.extraArgs[0]: Invalid value: \"-vq\": -q is not a memcached option: memcached would exit",
        ),
        (
            json!(["-v", "-o"]),
            "spec.memcached.extraArgs[1]: Invalid value: \"-o\": -o needs a value: memcached would exit",
        ),
        (
            json!(["--enable-s"]),
            "spec.memcached.extraArgs[0]: Invalid value: \"--enable-s\": --enable-s is ambiguous: memcached would exit",
        ),
    ] {
        assert_eq!(
            crate::extstore::refused(json!({"memcached": {"extraArgs": args}})),
            [shown]
        );
    }
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
        memcached(&r).args.expect("args"),
        words(
            "-m 256 -c 2048 -t 8 -I 2m -vv -Y /run/memcached/sasl/password-file -Z \
             -o ssl_chain_cert=/etc/memcached/tls/tls.crt \
             -o ssl_key=/etc/memcached/tls/tls.key -o ssl_min_version=2 \
             -o ssl_ca_cert=/etc/memcached/tls/ca.crt -o ssl_verify_mode=2 \
             -l *:11211 -l *:11212 -l notls:127.0.0.1:11213 -X -W \
             --max-reqs-per-event 20"
        )
    );
    let volumes: Vec<String> = (pod_spec(&r).volumes.expect("volumes").into_iter())
        .map(|v| v.name)
        .collect();
    assert_eq!(
        volumes,
        ["sasl-credentials", "sasl-auth-file", "tls-certificates"],
        "the same Secret backs both Secret volumes"
    );
}
