//! Every validation rule, and what an invalid spec does: the observed children kept as they are.

use serde_json::{Value, json};

use crate::common::{condition, decode, request_json};

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

/// The fields at fault in `spec` for a Memcached called `name`, in the order reported.
fn violations(name: &str, spec: Value) -> Vec<String> {
    let spec = serde_json::from_value(spec).expect("spec");
    memcached_hook::api::validation::validate(name, &spec)
        .into_iter()
        .map(|v| v.field)
        .collect()
}

/// Each spec of `table` is reported at exactly its fields (none: valid).
fn check(table: &[(Value, &[&str])]) {
    for (spec, fields) in table {
        assert_eq!(violations("my-cache", spec.clone()), *fields, "{spec}");
    }
}

#[test]
fn the_name_is_a_dns_label() {
    let none: [&str; 0] = [];
    assert_eq!(violations("my-cache", json!({})), none);
    assert_eq!(violations("1cache", json!({})), ["metadata.name"]);
    assert_eq!(violations(&"a".repeat(64), json!({})), ["metadata.name"]);
}

#[test]
fn values_out_of_range_or_malformed() {
    let mut table: Vec<(Value, &[&str])> = vec![
        (json!({"replicas": -1}), &["spec.replicas"]),
        (json!({"replicas": 65}), &["spec.replicas"]),
        (json!({"image": ""}), &["spec.image"]),
        (
            json!({"memcached": {"maxMemoryMB": 15}}),
            &["spec.memcached.maxMemoryMB"],
        ),
        (
            json!({"memcached": {"maxConnections": 65537}}),
            &["spec.memcached.maxConnections"],
        ),
        (
            json!({"memcached": {"threads": 129}}),
            &["spec.memcached.threads"],
        ),
        (
            json!({"memcached": {"verbosity": 3}}),
            &["spec.memcached.verbosity"],
        ),
        (
            json!({"resources": {"limits": {"memory": "64Mi"}}}),
            &["spec.resources.limits.memory"],
        ),
        // Equal to what memcached needs is enough.
        (json!({"resources": {"limits": {"memory": "96Mi"}}}), &[]),
        (
            json!({"resources": {"limits": {"cpu": "lots"}}}),
            &["spec.resources.limits.cpu"],
        ),
        (
            json!({"highAvailability": {"gracefulShutdown": {"enabled": true, "preStopDelaySeconds": 30, "terminationGracePeriodSeconds": 30}}}),
            &["spec.highAvailability.gracefulShutdown.terminationGracePeriodSeconds"],
        ),
        (
            json!({"highAvailability": {"podDisruptionBudget": {"enabled": true, "minAvailable": "50"}}}),
            &["spec.highAvailability.podDisruptionBudget.minAvailable"],
        ),
        // The three PDB admission rules of the reference are deliberately not violations.
        (
            json!({"replicas": 2, "highAvailability": {"podDisruptionBudget": {"enabled": true, "minAvailable": 2, "maxUnavailable": 1}}}),
            &[],
        ),
        (
            json!({"security": {"sasl": {"enabled": true}}}),
            &["spec.security.sasl.credentialsSecretRef.name"],
        ),
        (
            json!({"security": {"tls": {"enabled": true, "certificateSecretRef": {"name": ""}}}}),
            &["spec.security.tls.certificateSecretRef.name"],
        ),
        (
            json!({"replicas": 2, "resources": {"requests": {"cpu": "1"}}, "autoscaling": {"enabled": true, "maxReplicas": 3}}),
            &["spec.replicas"],
        ),
        (
            json!({"resources": {"requests": {"cpu": "1"}}, "autoscaling": {"enabled": true}}),
            &["spec.autoscaling.maxReplicas"],
        ),
        (
            json!({"resources": {"requests": {"cpu": "1"}}, "autoscaling": {"enabled": true, "minReplicas": 4, "maxReplicas": 3}}),
            &["spec.autoscaling.minReplicas"],
        ),
        (
            json!({"autoscaling": {"enabled": true, "maxReplicas": 3}}),
            &["spec.resources.requests.cpu"],
        ),
    ];
    for bad in ["1g", "abc", "1M", "1024"] {
        table.push((
            json!({"memcached": {"maxItemSize": bad}}),
            &["spec.memcached.maxItemSize"],
        ));
    }
    check(&table);
}

/// A string of `n` characters.
fn long(n: usize) -> String {
    "x".repeat(n)
}

#[test]
fn strings_lists_and_maps_over_their_bounds() {
    check(&[
        (json!({"image": long(1025)}), &["spec.image"]),
        (
            json!({"monitoring": {"exporterImage": long(1025)}}),
            &["spec.monitoring.exporterImage"],
        ),
        (
            json!({"memcached": {"extraArgs": vec!["-v"; 65]}}),
            &["spec.memcached.extraArgs"],
        ),
        (
            json!({"memcached": {"extraArgs": ["-v", long(1025)]}}),
            &["spec.memcached.extraArgs[1]"],
        ),
        (
            json!({"memcached": {"maxItemSize": format!("{}1m", "0".repeat(15))}}),
            &["spec.memcached.maxItemSize"],
        ),
        (
            json!({"highAvailability": {"podDisruptionBudget": {"maxUnavailable": format!("{}1%", "0".repeat(15))}}}),
            &["spec.highAvailability.podDisruptionBudget.maxUnavailable"],
        ),
        (
            json!({"highAvailability": {"topologySpreadConstraints": vec![json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}); 17]}}),
            &["spec.highAvailability.topologySpreadConstraints"],
        ),
        (
            json!({"monitoring": {"serviceMonitor": {"interval": long(65)}}}),
            &["spec.monitoring.serviceMonitor.interval"],
        ),
        (
            json!({"monitoring": {"serviceMonitor": {"scrapeTimeout": long(65)}}}),
            &["spec.monitoring.serviceMonitor.scrapeTimeout"],
        ),
        (
            json!({"monitoring": {"serviceMonitor": {"additionalLabels": {"team": long(64)}}}}),
            &["spec.monitoring.serviceMonitor.additionalLabels.team"],
        ),
        (
            json!({"monitoring": {"serviceMonitor": {"additionalLabels": {long(318): "a"}}}}),
            &["spec.monitoring.serviceMonitor.additionalLabels"],
        ),
        (
            json!({"security": {"tls": {"certificateSecretRef": {"name": long(254)}}}}),
            &["spec.security.tls.certificateSecretRef.name"],
        ),
        (
            json!({"security": {"networkPolicy": {"allowedSources": vec![json!({"podSelector": {}}); 65]}}}),
            &["spec.security.networkPolicy.allowedSources"],
        ),
        (
            json!({"autoscaling": {"metrics": vec![json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 80}}}); 17]}}),
            &["spec.autoscaling.metrics"],
        ),
        (
            json!({"service": {"annotations": {"note": long(64 * 1024 + 1)}}}),
            &["spec.service.annotations.note"],
        ),
        (
            json!({"service": {"annotations": (0..65).map(|i| (format!("a{i}"), json!("v"))).collect::<serde_json::Map<_, _>>()}}),
            &["spec.service.annotations"],
        ),
        (
            json!({"service": {"annotations": {"a": long(60_000), "b": long(60_000), "c": long(20_000)}}}),
            &["spec.service.annotations"],
        ),
    ]);
}

#[test]
fn at_the_bounds_is_valid() {
    // Lengths count characters, as the API server does.
    // A DNS subdomain of `n` characters: labels of at most 63.
    let subdomain = |n: usize| {
        let mut name = format!("{}.", "p".repeat(63)).repeat(n / 64);
        name.push_str(&"p".repeat(n % 64));
        name
    };
    let labels: serde_json::Map<String, Value> = (0..64)
        .map(|i| (format!("{}/k{i:02}", subdomain(253)), json!("v".repeat(63))))
        .collect();
    check(&[(
        json!({"image": long(1024), "memcached": {"extraArgs": vec![long(1024); 64],
               "maxItemSize": format!("{}1m", "0".repeat(14))},
               "monitoring": {"exporterImage": "é".repeat(1024),
                              "serviceMonitor": {"additionalLabels": labels, "interval": long(64)}},
               "security": {"sasl": {"credentialsSecretRef": {"name": subdomain(253)}}},
               "service": {"annotations": {"a": long(64 * 1024), "b": long(64 * 1024 - 2)}}}),
        &[],
    )]);
}

#[test]
fn the_hooks_own_keys_and_the_syntax_of_names() {
    let many: serde_json::Map<String, Value> = (0..40)
        .map(|i| (format!("a{i}"), json!("v".repeat(2000))))
        .collect();
    check(&[
        (
            json!({"podLabels": {"app.kubernetes.io/instance": "x"}}),
            &["spec.podLabels"],
        ),
        (
            json!({"podLabels": {"app.kubernetes.io/version": "2"}}),
            &["spec.podLabels"],
        ),
        (json!({"podLabels": {"a/b/c": "x"}}), &["spec.podLabels"]),
        (
            json!({"podLabels": {"team": "a b"}}),
            &["spec.podLabels.team"],
        ),
        (
            json!({"podAnnotations": {"memcached.c5c3.io/secret-hash": "0"}}),
            &["spec.podAnnotations"],
        ),
        (
            json!({"service": {"labels": {"app.kubernetes.io/managed-by": "helm"}}}),
            &["spec.service.labels"],
        ),
        (
            json!({"nodeSelector": {"pool": "-x"}}),
            &["spec.nodeSelector.pool"],
        ),
        (
            json!({"tolerations": vec![json!({"operator": "Exists"}); 33]}),
            &["spec.tolerations"],
        ),
        (
            json!({"imagePullSecrets": vec![json!({"name": "r"}); 17]}),
            &["spec.imagePullSecrets"],
        ),
        (
            json!({"imagePullSecrets": [{"name": ""}]}),
            &["spec.imagePullSecrets[0].name"],
        ),
        (
            json!({"priorityClassName": "Cache"}),
            &["spec.priorityClassName"],
        ),
        (
            json!({"priorityClassName": "c".repeat(254)}),
            &["spec.priorityClassName"],
        ),
        (
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                vec![json!({"topologyKey": "zone"}); 17]}}}),
            &["spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"],
        ),
        // Over 64 KiB in total.
        (json!({"podAnnotations": many}), &["spec.podAnnotations"]),
    ]);
}
