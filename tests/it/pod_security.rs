//! Every pod the hook renders passes the Pod Security Standards' `restricted` profile with no
//! security context in the spec: each sample of `config/samples/` and each feature combination,
//! every container (init containers and native sidecars too), checked against the profile's
//! rules as the API server's PodSecurity admission applies them (a small checker below).

use serde_json::{Value, json};

use crate::common::{
    memcached, must, pod_spec, render, restricted_container, restricted_pod, strict, sync_value,
    sync_with,
};
use crate::warm_restart::request;

/// The volume types `restricted` allows.
const ALLOWED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

fn seccomp_ok(profile: &Value) -> bool {
    matches!(
        profile["type"].as_str(),
        Some("RuntimeDefault" | "Localhost")
    )
}

/// The `restricted` rules the pod template `pod` (a PodSpec as JSON) breaks; `numeric_user`: the
/// hook's default user must be there too (a numeric, non-zero `runAsUser` for every container).
fn violations(pod: &Value, numeric_user: bool) -> Vec<String> {
    let mut out = Vec::new();
    let pod_sc = &pod["securityContext"];
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        if pod[host] == json!(true) {
            out.push(format!("{host} is true"));
        }
    }
    for v in pod["volumes"].as_array().into_iter().flatten() {
        let kind = v
            .as_object()
            .and_then(|o| o.keys().find(|k| k.as_str() != "name").cloned());
        if !kind
            .as_deref()
            .is_some_and(|k| ALLOWED_VOLUMES.contains(&k))
        {
            out.push(format!("volume {} of type {kind:?}", v["name"]));
        }
    }
    if pod_sc["runAsUser"] == json!(0) {
        out.push("pod runAsUser 0".to_owned());
    }
    if !pod_sc["seccompProfile"].is_null() && !seccomp_ok(&pod_sc["seccompProfile"]) {
        out.push(format!("pod seccompProfile {}", pod_sc["seccompProfile"]));
    }
    for sysctl in pod_sc["sysctls"].as_array().into_iter().flatten() {
        out.push(format!("sysctl {sysctl}"));
    }
    let containers = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|list| pod[*list].as_array().into_iter().flatten());
    let mut count = 0;
    for c in containers {
        count += 1;
        let name = c["name"].as_str().unwrap_or("?");
        let sc = &c["securityContext"];
        let mut fail = |what: &str| out.push(format!("container {name}: {what}"));
        if sc["privileged"] == json!(true) {
            fail("privileged");
        }
        if sc["allowPrivilegeEscalation"] != json!(false) {
            fail("allowPrivilegeEscalation is not false");
        }
        let drop = sc["capabilities"]["drop"].as_array();
        if !drop.is_some_and(|d| d.contains(&json!("ALL"))) {
            fail("capabilities do not drop ALL");
        }
        for added in sc["capabilities"]["add"].as_array().into_iter().flatten() {
            if added != "NET_BIND_SERVICE" {
                fail(&format!("adds capability {added}"));
            }
        }
        let non_root = sc["runAsNonRoot"]
            .as_bool()
            .or(pod_sc["runAsNonRoot"].as_bool());
        if non_root != Some(true) {
            fail("runAsNonRoot is not true");
        }
        let user = if sc["runAsUser"].is_null() {
            &pod_sc["runAsUser"]
        } else {
            &sc["runAsUser"]
        };
        if *user == json!(0) {
            fail("runAsUser 0");
        }
        if numeric_user && user.as_i64().is_none_or(|u| u <= 0) {
            fail(&format!("no numeric non-zero runAsUser ({user})"));
        }
        let seccomp = if sc["seccompProfile"].is_null() {
            &pod_sc["seccompProfile"]
        } else {
            &sc["seccompProfile"]
        };
        if !seccomp_ok(seccomp) {
            fail(&format!("seccompProfile {seccomp}"));
        }
        if sc["procMount"].as_str().is_some_and(|p| p != "Default") {
            fail("procMount");
        }
        for port in c["ports"].as_array().into_iter().flatten() {
            if port["hostPort"].as_i64().is_some_and(|p| p != 0) {
                fail("hostPort");
            }
        }
    }
    if count == 0 {
        out.push("no containers".to_owned());
    }
    out
}

/// The pod templates of the workloads in `response`, by workload name.
fn templates(response: &Value) -> Vec<(String, Value)> {
    response["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter(|c| matches!(c["kind"].as_str(), Some("Deployment" | "StatefulSet")))
        .map(|c| {
            let name = c["metadata"]["name"].as_str().unwrap_or("?").to_owned();
            (name, c["spec"]["template"]["spec"].clone())
        })
        .collect()
}

/// Renders `spec` (first sync, a controller that declares StatefulSets) with and without the
/// reload agent reporting on its pod (`--relate-pods`).
fn rendered(spec: &Value) -> Vec<Value> {
    [false, true]
        .into_iter()
        .map(|relate_pods| {
            let options = memcached_hook::Options {
                relate_pods,
                ..memcached_hook::Options::default()
            };
            sync_with(&request(spec.clone(), json!({})), &options)
        })
        .collect()
}

/// The samples, and the feature combinations, with no security context in the spec.
fn specs() -> Vec<(String, Value)> {
    let sasl = json!({"enabled": true, "credentialsSecretRef": {"name": "s"}});
    let tls = json!({"enabled": true, "certificateSecretRef": {"name": "t"}});
    let mtls = json!({"enabled": true, "enableClientCert": true,
                      "certificateSecretRef": {"name": "t"}});
    let mut out: Vec<(String, Value)> = vec![
        ("empty".into(), json!({})),
        ("tls".into(), json!({"security": {"tls": tls}})),
        ("sasl".into(), json!({"security": {"sasl": sasl}})),
        (
            "sasl + mTLS, reload agent".into(),
            json!({"security": {"sasl": sasl, "tls": mtls, "secretRotation": "Reload"}}),
        ),
        (
            "sasl + TLS, rolling restart (auth-file step, no agent)".into(),
            json!({"security": {"sasl": sasl, "tls": tls, "secretRotation": "RollingRestart"}}),
        ),
        (
            "exporter".into(),
            json!({"monitoring": {"enabled": true, "serviceMonitor": {}}}),
        ),
        (
            "stats exporter (SASL) + TLS".into(),
            json!({"monitoring": {"enabled": true}, "security": {"sasl": sasl, "tls": tls}}),
        ),
        (
            "statefulset".into(),
            json!({"workload": "StatefulSet", "replicas": 3}),
        ),
        (
            "warm restart with everything".into(),
            json!({"workload": "StatefulSet", "warmRestart": {"enabled": true},
                   "monitoring": {"enabled": true},
                   "highAvailability": {"gracefulShutdown": {"enabled": true}},
                   "security": {"sasl": sasl, "tls": mtls}}),
        ),
        (
            "zones".into(),
            json!({"replicas": 2, "zones": {"names": ["zone-a", "zone-b", "zone-c"]},
                   "security": {"tls": tls}, "monitoring": {"enabled": true}}),
        ),
        (
            "zones, statefulset".into(),
            json!({"workload": "StatefulSet", "zones": {"names": ["zone-a", "zone-b"]}}),
        ),
        (
            "extstore on an emptyDir, SASL, monitoring".into(),
            json!({"extstore": {"enabled": true, "size": "512Mi", "volume": "EmptyDir"},
                   "monitoring": {"enabled": true}, "security": {"sasl": sasl}}),
        ),
    ];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/config/samples");
    let mut samples: Vec<_> = std::fs::read_dir(dir)
        .expect("config/samples")
        .map(|e| e.expect("entry").path())
        .collect();
    samples.sort();
    assert_eq!(samples.len(), 11, "the table covers every sample");
    for path in samples {
        let text = std::fs::read_to_string(&path).expect("sample");
        let object: Value = serde_saphyr::from_str(&text).expect("YAML");
        out.push((path.display().to_string(), object["spec"].clone()));
    }
    out
}

#[test]
fn every_container_of_every_sample_and_feature_passes_restricted() {
    let (mut checked, mut statefulsets) = (0, 0);
    for (name, spec) in specs() {
        for response in rendered(&spec) {
            let pods = templates(&response);
            assert!(!pods.is_empty(), "{name}: no workload rendered");
            statefulsets += response["children"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["kind"] == "StatefulSet")
                .count();
            for (workload, pod) in pods {
                let broken = violations(&pod, true);
                assert!(broken.is_empty(), "{name} ({workload}): {broken:#?}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 38, "{checked} pod templates checked");
    assert!(
        statefulsets >= 8,
        "{statefulsets} StatefulSet pod templates checked"
    );
}

#[test]
fn platform_passes_restricted_without_naming_a_user() {
    for (name, mut spec) in specs() {
        // A sample that names its own user keeps it: this is about the defaults.
        let security = spec["security"].as_object_mut();
        if let Some(s) = security {
            s.remove("podSecurityContext");
            s.remove("containerSecurityContext");
        }
        spec["security"]["defaultUser"] = json!("Platform");
        for response in rendered(&spec) {
            for (workload, pod) in templates(&response) {
                let broken = violations(&pod, false);
                assert!(broken.is_empty(), "{name} ({workload}): {broken:#?}");
                let text = pod.to_string();
                for field in ["runAsUser", "runAsGroup", "fsGroup"] {
                    assert!(!text.contains(field), "{name} ({workload}): {field}");
                }
            }
        }
    }
}

#[test]
fn the_checker_finds_what_restricted_refuses() {
    let good = json!({"securityContext": {"runAsNonRoot": true, "runAsUser": 11211,
                                          "seccompProfile": {"type": "RuntimeDefault"}},
                      "containers": [{"name": "c", "securityContext": {
                          "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]});
    assert!(violations(&good, true).is_empty());
    let broken = |path: &[&str], value: Value| {
        let mut pod = good.clone();
        let mut at = &mut pod;
        for key in &path[..path.len() - 1] {
            at = match key.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*key],
            };
        }
        at[path[path.len() - 1]] = value;
        violations(&pod, true)
    };
    for (path, value) in [
        (&["hostNetwork"][..], json!(true)),
        (
            &["volumes"][..],
            json!([{"name": "h", "hostPath": {"path": "/"}}]),
        ),
        (&["securityContext", "runAsNonRoot"][..], json!(false)),
        (&["securityContext", "runAsUser"][..], json!(0)),
        (
            &["securityContext", "seccompProfile"][..],
            json!({"type": "Unconfined"}),
        ),
        (&["securityContext", "seccompProfile"][..], Value::Null),
        (
            &["containers", "0", "securityContext", "privileged"][..],
            json!(true),
        ),
        (
            &[
                "containers",
                "0",
                "securityContext",
                "allowPrivilegeEscalation",
            ][..],
            Value::Null,
        ),
        (
            &["containers", "0", "securityContext", "capabilities"][..],
            json!({"drop": ["NET_RAW"]}),
        ),
        (
            &["containers", "0", "securityContext", "capabilities"][..],
            json!({"drop": ["ALL"], "add": ["SYS_ADMIN"]}),
        ),
        (
            &["containers", "0", "ports"][..],
            json!([{"containerPort": 80, "hostPort": 80}]),
        ),
    ] {
        assert!(
            !broken(path, value.clone()).is_empty(),
            "{path:?} = {value}"
        );
    }
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
