//! One test per rule of the Deployment, the Service and the PodDisruptionBudget
//! (docs/behaviour.md), and per row of the reference operator's tables.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::core::v1::{
    ContainerPort, ResourceRequirements, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::common::{
    child, condition, decode, decoded, map, memcached, must, pod_spec, render, request_json,
    restricted_container, restricted_pod, strict, sync_value, try_typed, typed, words,
};

fn base_labels(name: &str) -> BTreeMap<String, String> {
    map(&[
        ("app.kubernetes.io/name", "memcached"),
        ("app.kubernetes.io/instance", name),
        ("app.kubernetes.io/managed-by", "memcached-operator"),
    ])
}

fn base_selector(name: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(base_labels(name)),
        match_expressions: None,
    }
}

/// Each field named with `true` (its typed value is `None`) must be absent; names those written.
fn assert_absent(fields: &[(&str, bool)]) {
    let written: Vec<&str> = (fields.iter().filter(|(_, absent)| !absent))
        .map(|(name, _)| *name)
        .collect();
    assert!(
        written.is_empty(),
        "written, but should be absent: {written:?}"
    );
}

// ---- Labels and selector (docs/behaviour.md: labels) ----

#[test]
fn every_child_carries_the_three_recommended_labels() {
    let r = render(json!({"highAvailability": {"podDisruptionBudget": {"enabled": true}}}));
    let base = Some(base_labels("my-cache"));
    assert_eq!(typed::<Service>(&r).metadata.labels, base);
    assert_eq!(typed::<PodDisruptionBudget>(&r).metadata.labels, base);
    let dep: Deployment = typed(&r);
    let mut with_version = base_labels("my-cache");
    with_version.insert("app.kubernetes.io/version".to_owned(), "1.6.45".to_owned());
    assert_eq!(dep.metadata.labels.as_ref(), Some(&with_version));
    let template = dep.spec.expect("spec").template.metadata.expect("metadata");
    assert_eq!(template.labels, Some(with_version));
}

#[test]
fn selectors_are_the_base_labels_and_never_change_with_the_spec() {
    let plain = render(json!({}));
    let changed = render(
        json!({"image": "registry.io/memcached:1.6.40", "replicas": 7,
                               "highAvailability": {"antiAffinityPreset": "hard",
                                                    "podDisruptionBudget": {"enabled": true}}}),
    );
    for r in [&plain, &changed] {
        let deployment = typed::<Deployment>(r).spec.expect("spec");
        assert_eq!(deployment.selector, base_selector("my-cache"));
        let service = typed::<Service>(r).spec.expect("spec");
        assert_eq!(service.selector, Some(base_labels("my-cache")));
    }
    let pdb = typed::<PodDisruptionBudget>(&changed).spec.expect("spec");
    assert_eq!(pdb.selector, Some(base_selector("my-cache")));
}

#[test]
fn version_label_only_for_a_usable_tag() {
    for (image, want) in [
        ("memcached:1.6.29", Some("1.6.29")),
        ("memcached", None),
        ("memcached@sha256:0123", None),
        ("host:5000/img", None),
        ("memcached:1.6-alpine", Some("1.6-alpine")),
    ] {
        let r = render(json!({"image": image}));
        let labels = typed::<Deployment>(&r).metadata.labels.expect("labels");
        let version = labels.get("app.kubernetes.io/version").map(String::as_str);
        assert_eq!(version, want, "{image}");
        let service = typed::<Service>(&r).metadata.labels.expect("labels");
        assert_eq!(service.get("app.kubernetes.io/version"), None);
    }
}

#[test]
fn hook_never_writes_what_metacontroller_owns() {
    let r = render(json!({"highAvailability": {"podDisruptionBudget": {"enabled": true}}}));
    for c in r["children"].as_array().expect("children") {
        let meta = &c["metadata"];
        for field in ["namespace", "ownerReferences", "resourceVersion", "uid"] {
            assert!(meta.get(field).is_none(), "{field} in {c}");
        }
        assert!(meta["labels"].get("controller-uid").is_none());
        assert!(c.get("status").is_none());
    }
    assert!(r.get("finalized").is_none());
    assert_eq!(
        r.as_object().expect("object").len(),
        2,
        "only children and status: {r}"
    );
}

// ---- Deployment ----

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
fn anti_affinity_presets() {
    let selector = json!({"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "my-cache"}});
    let affinity = |spec: Value| pod_spec(&render(spec)).affinity;
    let soft = affinity(json!({"highAvailability": {}}));
    assert_eq!(
        soft,
        Some(strict(
            &json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}}]}})
        ))
    );
    let hard = affinity(json!({"highAvailability": {"antiAffinityPreset": "hard"}}));
    assert_eq!(
        hard,
        Some(strict(
            &json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}]}})
        ))
    );
    let only_pdb =
        affinity(json!({"highAvailability": {"podDisruptionBudget": {"enabled": false}}}));
    assert_eq!(only_pdb, soft);
    assert!(affinity(json!({})).is_none());
}

#[test]
fn topology_spread_is_copied_verbatim_and_independent_of_affinity() {
    let tsc = json!([{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                      "labelSelector": {"matchLabels": {"app": "x"}}},
                     {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}]);
    let pod = pod_spec(&render(
        json!({"highAvailability": {"topologySpreadConstraints": tsc}}),
    ));
    assert_eq!(pod.topology_spread_constraints, Some(strict(&tsc)));
    assert!(pod.affinity.is_some());
    let empty = pod_spec(&render(
        json!({"highAvailability": {"topologySpreadConstraints": []}}),
    ));
    assert!(empty.topology_spread_constraints.is_none());
}

#[test]
fn graceful_shutdown() {
    let r = render(
        json!({"highAvailability": {"gracefulShutdown": {"enabled": true, "preStopDelaySeconds": 15, "terminationGracePeriodSeconds": 45}}}),
    );
    assert_eq!(
        memcached(&r).lifecycle,
        Some(strict(
            &json!({"preStop": {"exec": {"command": ["sleep", "15"]}}})
        ))
    );
    assert_eq!(pod_spec(&r).termination_grace_period_seconds, Some(45));
    let defaults = render(json!({"highAvailability": {"gracefulShutdown": {"enabled": true}}}));
    let pre_stop = memcached(&defaults)
        .lifecycle
        .and_then(|l| l.pre_stop)
        .and_then(|h| h.exec)
        .and_then(|e| e.command);
    assert_eq!(pre_stop, Some(vec!["sleep".to_owned(), "10".to_owned()]));
    assert_eq!(
        pod_spec(&defaults).termination_grace_period_seconds,
        Some(30)
    );
    let off = render(
        json!({"highAvailability": {"gracefulShutdown": {"enabled": false, "preStopDelaySeconds": 15}}}),
    );
    assert!(memcached(&off).lifecycle.is_none());
    assert_eq!(pod_spec(&off).termination_grace_period_seconds, None);
}

#[test]
fn security_contexts_set_their_fields_over_the_defaults() {
    let pod_sc = json!({"runAsUser": 2000, "fsGroup": 3000, "supplementalGroups": [4000],
                        "seccompProfile": {"type": "Localhost", "localhostProfile": "memcached.json"}});
    let c_sc = json!({"readOnlyRootFilesystem": false, "capabilities": {"drop": ["NET_RAW"]},
                      "runAsUser": 5000});
    let r = render(
        json!({"security": {"podSecurityContext": pod_sc, "containerSecurityContext": c_sc}}),
    );
    // Each field the user sets is theirs, whole; the others keep the hook's defaults.
    assert_eq!(
        pod_spec(&r).security_context,
        Some(strict(
            &json!({"runAsNonRoot": true, "runAsUser": 2000, "runAsGroup": 11211,
                            "fsGroup": 3000, "supplementalGroups": [4000],
                            "seccompProfile": {"type": "Localhost",
                                               "localhostProfile": "memcached.json"}})
        ))
    );
    assert_eq!(
        memcached(&r).security_context,
        Some(strict(&json!({"allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": false,
                            "capabilities": {"drop": ["NET_RAW"]}, "runAsUser": 5000})))
    );
    // What the defaults already are changes nothing.
    let same = render(json!({"security": {"podSecurityContext": restricted_pod(),
                                           "containerSecurityContext": restricted_container()}}));
    assert_eq!(
        pod_spec(&same).security_context,
        pod_spec(&render(json!({}))).security_context
    );
    assert_eq!(
        memcached(&same).security_context,
        memcached(&render(json!({}))).security_context
    );
}

#[test]
fn platform_leaves_the_user_to_the_platform_everywhere() {
    let spec = json!({"workload": "StatefulSet", "warmRestart": {"enabled": true},
                      "security": {"defaultUser": "Platform"}});
    let r = sync_value(&crate::warm_restart::request(spec, json!({})));
    let sts = must(&r, "StatefulSet");
    let pod = &sts["spec"]["template"]["spec"];
    assert_eq!(
        pod["securityContext"],
        json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}}),
        "no runAsUser, runAsGroup or fsGroup"
    );
    let text = pod.to_string();
    for field in ["runAsUser", "runAsGroup", "fsGroup"] {
        assert!(!text.contains(field), "{field} in {text}");
    }
    // A user the spec names still wins.
    let named = render(json!({"security": {"defaultUser": "Platform",
                                            "podSecurityContext": {"runAsUser": 1000700000}}}));
    assert_eq!(
        pod_spec(&named)
            .security_context
            .and_then(|c| c.run_as_user),
        Some(1_000_700_000)
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

// ---- Placement, pull secrets, pod metadata, memory request ----

#[test]
fn placement_and_pull_secrets_are_copied_to_the_pod_template() {
    let toleration = json!({"key": "dedicated", "operator": "Equal", "value": "cache",
                            "effect": "NoSchedule"});
    let node = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["cache"]}]}]}});
    let r = render(json!({
        "nodeSelector": {"node.example.com/pool": "cache"}, "tolerations": [toleration],
        "affinity": {"nodeAffinity": node}, "priorityClassName": "cache-critical",
        "imagePullSecrets": [{"name": "registry"}]}));
    let pod = pod_spec(&r);
    assert_eq!(
        pod.node_selector,
        Some(map(&[("node.example.com/pool", "cache")]))
    );
    assert_eq!(pod.tolerations, Some(vec![decoded(toleration)]));
    assert_eq!(pod.affinity, decoded(json!({"nodeAffinity": node})));
    assert_eq!(pod.priority_class_name.as_deref(), Some("cache-critical"));
    assert_eq!(
        pod.image_pull_secrets,
        decoded(json!([{"name": "registry"}]))
    );
    // Empty lists and maps are left out (the API server would drop them).
    let r = render(
        json!({"nodeSelector": {}, "tolerations": [], "imagePullSecrets": [],
                          "affinity": {"podAffinity": {
                              "preferredDuringSchedulingIgnoredDuringExecution": []}}}),
    );
    let pod = pod_spec(&r);
    assert_absent(&[
        ("nodeSelector", pod.node_selector.is_none()),
        ("tolerations", pod.tolerations.is_none()),
        ("imagePullSecrets", pod.image_pull_secrets.is_none()),
        ("priorityClassName", pod.priority_class_name.is_none()),
        ("affinity", pod.affinity.is_none()),
    ]);
}

#[test]
fn a_user_pod_anti_affinity_replaces_the_preset() {
    let user = json!({"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "topology.kubernetes.io/zone",
         "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "my-cache"}}}]});
    let pod_affinity = json!({"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]});
    let affinity = |spec: Value| pod_spec(&render(spec)).affinity;
    let replaced = affinity(json!({"highAvailability": {"antiAffinityPreset": "soft"},
                                   "affinity": {"podAntiAffinity": user, "podAffinity": pod_affinity}}));
    assert_eq!(
        replaced,
        Some(strict(
            &json!({"podAntiAffinity": user, "podAffinity": pod_affinity})
        ))
    );
    // Without a podAntiAffinity of the user's, the preset stays; `{}` means none.
    let kept = affinity(json!({"highAvailability": {"antiAffinityPreset": "hard"},
                               "affinity": {"podAffinity": pod_affinity}}));
    let kept = kept.expect("affinity");
    let anti = kept.pod_anti_affinity.expect("the preset's anti-affinity");
    let required = anti.required_during_scheduling_ignored_during_execution;
    assert_eq!(
        required.expect("required terms")[0].topology_key,
        "kubernetes.io/hostname"
    );
    assert_eq!(kept.pod_affinity, Some(strict(&pod_affinity)));
    let none = affinity(json!({"highAvailability": {}, "affinity": {"podAntiAffinity": {}}}));
    assert!(none.is_none(), "{none:?}");
}

#[test]
fn pod_labels_and_annotations_join_the_hooks_own() {
    let mut request = request_json(json!({
        "image": "memcached:1.6.38",
        "podLabels": {"team": "checkout", "app.kubernetes.io/part-of": "shop"},
        "podAnnotations": {"sidecar.istio.io/inject": "true"},
        "service": {"labels": {"team": "checkout"}}}));
    request["parent"]["metadata"]["annotations"] =
        json!({"memcached.c5c3.io/restart-trigger": "1"});
    let r = sync_value(&request);
    let dep: Deployment = typed(&r);
    let mut pod_labels = base_labels("my-cache");
    pod_labels.insert("app.kubernetes.io/version".to_owned(), "1.6.38".to_owned());
    let own = pod_labels.clone();
    pod_labels.extend(map(&[
        ("team", "checkout"),
        ("app.kubernetes.io/part-of", "shop"),
    ]));
    assert_eq!(
        dep.metadata.labels,
        Some(own),
        "the Deployment's own labels stay the hook's"
    );
    let spec = dep.spec.expect("spec");
    assert_eq!(spec.selector, base_selector("my-cache"));
    let template = spec.template.metadata.expect("metadata");
    assert_eq!(template.labels, Some(pod_labels));
    assert_eq!(
        template.annotations,
        Some(map(&[
            ("sidecar.istio.io/inject", "true"),
            ("memcached.c5c3.io/restart-trigger", "1"),
        ]))
    );
    let service: Service = typed(&r);
    let mut service_labels = base_labels("my-cache");
    service_labels.insert("team".to_owned(), "checkout".to_owned());
    assert_eq!(service.metadata.labels, Some(service_labels));
    let selector = service.spec.expect("spec").selector;
    assert_eq!(selector, Some(base_labels("my-cache")));
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

// ---- Service ----

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

// ---- PodDisruptionBudget ----

fn pdb_spec(pdb: Value) -> Option<PodDisruptionBudgetSpec> {
    let spec = json!({"replicas": 5, "highAvailability": {"podDisruptionBudget": pdb}});
    try_typed::<PodDisruptionBudget>(&render(spec)).map(|p| p.spec.expect("spec"))
}

/// The budget of the parent `my-cache` with exactly these two fields (and the default policy
/// for unhealthy pods).
fn budget(
    min_available: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
) -> Option<PodDisruptionBudgetSpec> {
    Some(PodDisruptionBudgetSpec {
        min_available,
        max_unavailable,
        selector: Some(base_selector("my-cache")),
        unhealthy_pod_eviction_policy: Some("AlwaysAllow".to_owned()),
    })
}

#[test]
fn pdb_unhealthy_pod_eviction_policy() {
    let policy = |pdb: Value| pdb_spec(pdb).and_then(|s| s.unhealthy_pod_eviction_policy);
    let on = json!({"enabled": true});
    assert_eq!(policy(on).as_deref(), Some("AlwaysAllow"), "default");
    for set in ["AlwaysAllow", "IfHealthyBudget"] {
        let pdb = json!({"enabled": true, "unhealthyPodEvictionPolicy": set});
        assert_eq!(policy(pdb).as_deref(), Some(set), "copied");
    }
}

#[test]
fn pdb_mutual_exclusivity_table() {
    let (int, text) = (
        |i: i32| Some(IntOrString::Int(i)),
        |t: &str| Some(IntOrString::String(t.to_owned())),
    );
    assert_eq!(
        pdb_spec(json!({"enabled": true})),
        budget(int(1), None),
        "neither → minAvailable 1"
    );
    assert_eq!(
        pdb_spec(json!({"enabled": true, "minAvailable": 2})),
        budget(int(2), None)
    );
    assert_eq!(
        pdb_spec(json!({"enabled": true, "maxUnavailable": 1})),
        budget(None, int(1))
    );
    assert_eq!(
        pdb_spec(json!({"enabled": true, "minAvailable": 2, "maxUnavailable": 1})),
        budget(int(2), None),
        "both → minAvailable only"
    );
    assert_eq!(
        pdb_spec(json!({"enabled": true, "minAvailable": "50%"})),
        budget(text("50%"), None)
    );
    assert_eq!(
        pdb_spec(json!({"enabled": true, "maxUnavailable": "25%"})),
        budget(None, text("25%"))
    );
}

#[test]
fn pdb_is_opt_in() {
    assert_eq!(pdb_spec(json!({"enabled": false, "minAvailable": 1})), None);
    assert_eq!(pdb_spec(json!({})), None);
    assert!(
        child(
            &render(json!({"highAvailability": {}})),
            "PodDisruptionBudget"
        )
        .is_none()
    );
    assert!(child(&render(json!({})), "PodDisruptionBudget").is_none());
}

#[test]
fn disruption_budget_blocking_condition() {
    let blocking = |replicas: i32, pdb: Value| {
        let r =
            render(json!({"replicas": replicas, "highAvailability": {"podDisruptionBudget": pdb}}));
        let c = condition(&r, "DisruptionBudgetBlocking");
        (c.status, c.reason)
    };
    let yes = ("True".to_owned(), "NoDisruptionsAllowed".to_owned());
    let no = ("False".to_owned(), "DisruptionsAllowed".to_owned());
    assert_eq!(
        blocking(3, json!({"enabled": true, "minAvailable": 3})),
        yes
    );
    assert_eq!(
        blocking(3, json!({"enabled": true, "minAvailable": 5})),
        yes
    );
    assert_eq!(
        blocking(3, json!({"enabled": true, "minAvailable": "100%"})),
        yes
    );
    assert_eq!(
        blocking(3, json!({"enabled": true, "minAvailable": "67%"})),
        yes,
        "67% of 3 rounds up to 3"
    );
    assert_eq!(
        blocking(3, json!({"enabled": true, "maxUnavailable": 0})),
        yes
    );
    assert_eq!(
        blocking(3, json!({"enabled": true, "maxUnavailable": "0%"})),
        yes
    );
    assert_eq!(blocking(3, json!({"enabled": true, "minAvailable": 2})), no);
    assert_eq!(
        blocking(3, json!({"enabled": true, "minAvailable": "50%"})),
        no
    );
    assert_eq!(blocking(3, json!({"enabled": true})), no);
    assert_eq!(
        blocking(1, json!({"enabled": true})),
        yes,
        "the default budget blocks a single replica"
    );
    let r = render(
        json!({"replicas": 3, "highAvailability": {"podDisruptionBudget": {"enabled": true, "minAvailable": 3}}}),
    );
    let message = condition(&r, "DisruptionBudgetBlocking").message;
    assert!(
        message.contains("my-cache")
            && message.contains("minAvailable 3")
            && message.contains("3 replicas")
            && message.contains("drain"),
        "{message}"
    );
    assert!(child(&r, "PodDisruptionBudget").is_some(), "still emitted");
    let none = render(json!({}));
    assert!(
        crate::common::status(&none)
            .conditions
            .expect("conditions")
            .iter()
            .all(|c| c.type_ != "DisruptionBudgetBlocking")
    );
}

// ---- Declared child kinds ----

#[test]
fn undeclared_kinds_are_not_emitted_and_named_in_status() {
    let mut request =
        request_json(json!({"highAvailability": {"podDisruptionBudget": {"enabled": true}}}));
    request["controller"]["spec"]["childResources"] = json!([
        {"apiVersion": "apps/v1", "resource": "deployments"}, {"apiVersion": "v1", "resource": "services"}]);
    let r = sync_value(&request);
    assert!(child(&r, "PodDisruptionBudget").is_none());
    let c = condition(&r, "ChildResourcesMissing");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "NotDeclared")
    );
    let message = c.message;
    assert!(
        message.contains("poddisruptionbudgets.policy")
            && message.contains("spec.highAvailability.podDisruptionBudget.enabled"),
        "{message}"
    );
    let ok = render(json!({}));
    let c = condition(&ok, "ChildResourcesMissing");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "AllDeclared")
    );
}

// ---- Invalid input: nothing lost ----

fn steady_state() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sync/steady-state.json"
    );
    serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json")
}

/// The last-applied configuration of every observed child of a request, as JSON: what an
/// invalid spec keeps, to the byte.
fn last_applied(request: &Value) -> Vec<Value> {
    let observed = request["children"].as_object().expect("map").values();
    observed
        .flat_map(|m| m.as_object().expect("inner").values())
        .map(|o| {
            let text =
                &o["metadata"]["annotations"]["metacontroller.k8s.io/last-applied-configuration"];
            serde_json::from_str(text.as_str().expect("annotation")).expect("json")
        })
        .collect()
}

#[test]
fn invalid_spec_keeps_every_observed_child_as_last_applied() {
    let mut request = steady_state();
    request["parent"]["spec"]["replicas"] = json!(65);
    let response =
        memcached_hook::sync(&decode(&request), crate::common::now(), &Default::default())
            .expect("answered");
    let text = serde_json::to_string(&response).expect("encodes");
    let r: Value = serde_json::from_str(&text).expect("json");
    let last_applied = last_applied(&request);
    assert_eq!(
        r["children"].as_array().map(Vec::len),
        Some(last_applied.len())
    );
    for last in &last_applied {
        assert!(
            r["children"].as_array().expect("children").contains(last),
            "kept {}",
            last["kind"]
        );
    }
    let degraded = condition(&r, "Degraded");
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "InvalidSpec")
    );
    assert!(
        degraded.message.contains("spec.replicas"),
        "{}",
        degraded.message
    );
}

/// Over-long strings and over-full lists and maps are spec violations like any other: the
/// observed children are kept as last applied and `Degraded` names the field, without
/// repeating the value.
#[test]
fn over_bound_values_keep_the_observed_children() {
    let huge = "x".repeat(1 << 20);
    for (pointer, value, field, words) in [
        (
            "/parent/spec/image",
            json!(huge),
            "spec.image",
            "Too long: may not be more than 1024 bytes",
        ),
        (
            "/parent/spec/memcached/extraArgs",
            json!(vec!["-v"; 100_000]),
            "spec.memcached.extraArgs",
            "Too many: 100000: must have at most 64 items",
        ),
        (
            "/parent/spec/memcached/extraArgs",
            json!(vec![huge.clone(); 100]),
            // 1 + 64 violations: 32 are listed, the rest counted.
            "spec.memcached.extraArgs[30]",
            "Too long: may not be more than 1024 bytes, and 33 more]",
        ),
        (
            "/parent/spec/service",
            json!({"annotations": {"note": huge}}),
            "spec.service.annotations.note",
            "Too long: may not be more than 65536 bytes",
        ),
        (
            "/parent/spec/memcached/maxItemSize",
            json!(huge),
            "spec.memcached.maxItemSize",
            "Too long: may not be more than 16 bytes",
        ),
    ] {
        let mut request = steady_state();
        let (parent, last) = pointer.rsplit_once('/').expect("pointer");
        request
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .expect("object")
            .insert(last.to_owned(), value);
        let response =
            memcached_hook::sync(&decode(&request), crate::common::now(), &Default::default())
                .expect("answered");
        let r = serde_json::to_value(&response).expect("encodes");
        let last_applied = last_applied(&request);
        let mut children = r["children"].as_array().expect("children").clone();
        let mut want = last_applied;
        let key = |v: &Value| v["kind"].as_str().unwrap_or_default().to_owned();
        children.sort_by_key(key);
        want.sort_by_key(key);
        assert_eq!(children, want, "{field}: kept as last applied");
        let degraded = condition(&r, "Degraded");
        assert_eq!(
            (degraded.status.as_str(), degraded.reason.as_str()),
            ("True", "InvalidSpec"),
            "{field}"
        );
        let message = degraded.message;
        assert!(
            message.contains(&format!("{field}: {words}")),
            "{field}: {message}"
        );
        assert!(
            message.len() < 8192,
            "{field}: the message stays small ({} bytes)",
            message.len()
        );
    }
}

#[test]
fn invalid_spec_without_something_to_keep_is_a_422_not_a_deletion() {
    let first = request_json(json!({"replicas": 65}));
    let err = memcached_hook::sync(&decode(&first), crate::common::now(), &Default::default())
        .expect_err("rejected");
    assert_eq!(err.field(), "spec.replicas");
    let mut ssa = steady_state();
    ssa["parent"]["spec"]["replicas"] = json!(65);
    ssa["children"]["Service.v1"]["cache"]["metadata"]["annotations"] = json!({});
    assert!(
        memcached_hook::sync(&decode(&ssa), crate::common::now(), &Default::default()).is_err()
    );
}

#[test]
fn every_rule_is_checked() {
    let violations = |name: &str, spec: Value| -> Vec<String> {
        let spec = serde_json::from_value(spec).expect("spec");
        memcached_hook::api::validation::validate(name, &spec)
            .into_iter()
            .map(|v| v.field)
            .collect()
    };
    let ok: Vec<String> = vec![];
    assert_eq!(violations("my-cache", json!({})), ok);
    assert_eq!(violations("1cache", json!({})), ["metadata.name"]);
    assert_eq!(violations(&"a".repeat(64), json!({})), ["metadata.name"]);
    assert_eq!(
        violations("my-cache", json!({"replicas": -1})),
        ["spec.replicas"]
    );
    assert_eq!(
        violations("my-cache", json!({"replicas": 65})),
        ["spec.replicas"]
    );
    assert_eq!(violations("my-cache", json!({"image": ""})), ["spec.image"]);
    assert_eq!(
        violations("my-cache", json!({"memcached": {"maxMemoryMB": 15}})),
        ["spec.memcached.maxMemoryMB"]
    );
    assert_eq!(
        violations("my-cache", json!({"memcached": {"maxConnections": 65537}})),
        ["spec.memcached.maxConnections"]
    );
    assert_eq!(
        violations("my-cache", json!({"memcached": {"threads": 129}})),
        ["spec.memcached.threads"]
    );
    for bad in ["1g", "abc", "1M", "1024"] {
        assert_eq!(
            violations("my-cache", json!({"memcached": {"maxItemSize": bad}})),
            ["spec.memcached.maxItemSize"],
            "{bad}"
        );
    }
    assert_eq!(
        violations("my-cache", json!({"memcached": {"verbosity": 3}})),
        ["spec.memcached.verbosity"]
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"resources": {"limits": {"memory": "64Mi"}}})
        ),
        ["spec.resources.limits.memory"]
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"resources": {"limits": {"memory": "96Mi"}}})
        ),
        ok,
        "equal is OK"
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"resources": {"limits": {"cpu": "lots"}}})
        ),
        ["spec.resources.limits.cpu"]
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"highAvailability": {"gracefulShutdown": {"enabled": true, "preStopDelaySeconds": 30, "terminationGracePeriodSeconds": 30}}})
        ),
        ["spec.highAvailability.gracefulShutdown.terminationGracePeriodSeconds"]
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"highAvailability": {"podDisruptionBudget": {"enabled": true, "minAvailable": "50"}}})
        ),
        ["spec.highAvailability.podDisruptionBudget.minAvailable"]
    );
    assert_eq!(
        violations("my-cache", json!({"security": {"sasl": {"enabled": true}}})),
        ["spec.security.sasl.credentialsSecretRef.name"]
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"security": {"tls": {"enabled": true, "certificateSecretRef": {"name": ""}}}})
        ),
        ["spec.security.tls.certificateSecretRef.name"]
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"replicas": 2, "resources": {"requests": {"cpu": "1"}}, "autoscaling": {"enabled": true, "maxReplicas": 3}})
        ),
        ["spec.replicas"]
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"resources": {"requests": {"cpu": "1"}}, "autoscaling": {"enabled": true}})
        ),
        ["spec.autoscaling.maxReplicas"]
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"resources": {"requests": {"cpu": "1"}}, "autoscaling": {"enabled": true, "minReplicas": 4, "maxReplicas": 3}})
        ),
        ["spec.autoscaling.minReplicas"]
    );
    assert_eq!(
        violations(
            "my-cache",
            json!({"autoscaling": {"enabled": true, "maxReplicas": 3}})
        ),
        ["spec.resources.requests.cpu"]
    );
    // Bounds of free-form strings, lists and maps (src/api/spec.rs `bounds`).
    let long = |n: usize| "x".repeat(n);
    // A DNS subdomain of `n` characters: labels of at most 63.
    let subdomain = |n: usize| {
        let mut name = format!("{}.", "p".repeat(63)).repeat(n / 64);
        name.push_str(&"p".repeat(n % 64));
        name
    };
    for (spec, field) in [
        (json!({"image": long(1025)}), "spec.image"),
        (
            json!({"monitoring": {"exporterImage": long(1025)}}),
            "spec.monitoring.exporterImage",
        ),
        (
            json!({"memcached": {"extraArgs": vec!["-v"; 65]}}),
            "spec.memcached.extraArgs",
        ),
        (
            json!({"memcached": {"extraArgs": ["-v", long(1025)]}}),
            "spec.memcached.extraArgs[1]",
        ),
        (
            json!({"memcached": {"maxItemSize": format!("{}1m", "0".repeat(15))}}),
            "spec.memcached.maxItemSize",
        ),
        (
            json!({"highAvailability": {"podDisruptionBudget": {"maxUnavailable": format!("{}1%", "0".repeat(15))}}}),
            "spec.highAvailability.podDisruptionBudget.maxUnavailable",
        ),
        (
            json!({"highAvailability": {"topologySpreadConstraints": vec![json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}); 17]}}),
            "spec.highAvailability.topologySpreadConstraints",
        ),
        (
            json!({"monitoring": {"serviceMonitor": {"interval": long(65)}}}),
            "spec.monitoring.serviceMonitor.interval",
        ),
        (
            json!({"monitoring": {"serviceMonitor": {"scrapeTimeout": long(65)}}}),
            "spec.monitoring.serviceMonitor.scrapeTimeout",
        ),
        (
            json!({"monitoring": {"serviceMonitor": {"additionalLabels": {"team": long(64)}}}}),
            "spec.monitoring.serviceMonitor.additionalLabels.team",
        ),
        (
            json!({"monitoring": {"serviceMonitor": {"additionalLabels": {long(318): "a"}}}}),
            "spec.monitoring.serviceMonitor.additionalLabels",
        ),
        (
            json!({"security": {"tls": {"certificateSecretRef": {"name": long(254)}}}}),
            "spec.security.tls.certificateSecretRef.name",
        ),
        (
            json!({"security": {"networkPolicy": {"allowedSources": vec![json!({"podSelector": {}}); 65]}}}),
            "spec.security.networkPolicy.allowedSources",
        ),
        (
            json!({"autoscaling": {"metrics": vec![json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 80}}}); 17]}}),
            "spec.autoscaling.metrics",
        ),
        (
            json!({"service": {"annotations": {"note": long(64 * 1024 + 1)}}}),
            "spec.service.annotations.note",
        ),
        (
            json!({"service": {"annotations": (0..65).map(|i| (format!("a{i}"), json!("v"))).collect::<serde_json::Map<_, _>>()}}),
            "spec.service.annotations",
        ),
        (
            json!({"service": {"annotations": {"a": long(60_000), "b": long(60_000), "c": long(20_000)}}}),
            "spec.service.annotations",
        ),
    ] {
        assert_eq!(violations("my-cache", spec.clone()), [field], "{field}");
    }
    // At the bounds: valid. Lengths count characters, as the API server does.
    let labels: serde_json::Map<String, Value> = (0..64)
        .map(|i| (format!("{}/k{i:02}", subdomain(253)), json!("v".repeat(63))))
        .collect();
    assert_eq!(
        violations(
            "my-cache",
            json!({"image": long(1024), "memcached": {"extraArgs": vec![long(1024); 64],
                   "maxItemSize": format!("{}1m", "0".repeat(14))},
                   "monitoring": {"exporterImage": "é".repeat(1024),
                                  "serviceMonitor": {"additionalLabels": labels, "interval": long(64)}},
                   "security": {"sasl": {"credentialsSecretRef": {"name": subdomain(253)}}},
                   "service": {"annotations": {"a": long(64 * 1024), "b": long(64 * 1024 - 2)}}})
        ),
        ok
    );
    // The three PDB admission rules of the reference are deliberately not violations.
    assert_eq!(
        violations(
            "my-cache",
            json!({"replicas": 2, "highAvailability": {"podDisruptionBudget": {"enabled": true, "minAvailable": 2, "maxUnavailable": 1}}})
        ),
        ok
    );
    // The hook's own keys, syntax and bounds of the new fields.
    for (spec, field) in [
        (
            json!({"podLabels": {"app.kubernetes.io/instance": "x"}}),
            "spec.podLabels",
        ),
        (
            json!({"podLabels": {"app.kubernetes.io/version": "2"}}),
            "spec.podLabels",
        ),
        (json!({"podLabels": {"a/b/c": "x"}}), "spec.podLabels"),
        (json!({"podLabels": {"team": "a b"}}), "spec.podLabels.team"),
        (
            json!({"podAnnotations": {"memcached.c5c3.io/secret-hash": "0"}}),
            "spec.podAnnotations",
        ),
        (
            json!({"service": {"labels": {"app.kubernetes.io/managed-by": "helm"}}}),
            "spec.service.labels",
        ),
        (
            json!({"nodeSelector": {"pool": "-x"}}),
            "spec.nodeSelector.pool",
        ),
        (
            json!({"tolerations": vec![json!({"operator": "Exists"}); 33]}),
            "spec.tolerations",
        ),
        (
            json!({"imagePullSecrets": vec![json!({"name": "r"}); 17]}),
            "spec.imagePullSecrets",
        ),
        (
            json!({"imagePullSecrets": [{"name": ""}]}),
            "spec.imagePullSecrets[0].name",
        ),
        (
            json!({"priorityClassName": "Cache"}),
            "spec.priorityClassName",
        ),
        (
            json!({"priorityClassName": "c".repeat(254)}),
            "spec.priorityClassName",
        ),
        (
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                vec![json!({"topologyKey": "zone"}); 17]}}}),
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        ),
    ] {
        assert_eq!(violations("my-cache", spec.clone()), [field], "{spec}");
    }
    let many: serde_json::Map<String, Value> = (0..40)
        .map(|i| (format!("a{i}"), json!("v".repeat(2000))))
        .collect();
    assert_eq!(
        violations("my-cache", json!({"podAnnotations": many})),
        ["spec.podAnnotations"],
        "over 64 KiB in total"
    );
}
