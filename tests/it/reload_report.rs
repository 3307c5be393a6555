//! The reload agent's outcome on its Pod: with `--relate-pods` and Secrets reloaded in place,
//! the pods run as a ServiceAccount bound to the agent's ClusterRole, the agent writes its
//! condition on its Pod, and a failure there makes `SecretReload` False.

use k8s_openapi::api::core::v1::{Container, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use memcached_hook::Options;
use serde_json::{Value, json};

use crate::common::{child, condition, controller, pod_spec, request_json, strict, sync_with};

const AGENT_TYPE: &str = "memcached.c5c3.io/SecretReload";

fn relate() -> Options {
    Options {
        relate_pods: true,
        reload_agent_image: "ghcr.io/corp/memcached-hook:0.1.0".into(),
        ..Options::default()
    }
}

fn tls_spec() -> Value {
    json!({"replicas": 2, "security": {"tls": {"enabled": true,
        "certificateSecretRef": {"name": "certs"}}}})
}

/// A request whose controller declares ServiceAccounts and RoleBindings (or only `declared`).
fn request(spec: Value, declared: &[(&str, &str)]) -> Value {
    let mut r = request_json(spec);
    let mut c = controller();
    let resources = c["spec"]["childResources"].as_array_mut().expect("a list");
    for (api_version, resource) in declared {
        resources.push(json!({"apiVersion": api_version, "resource": resource}));
    }
    r["controller"] = c;
    r["related"] = json!({"Secret.v1": {"default/certs": {"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "certs", "namespace": "default"},
        "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}}}});
    r
}

const BOTH: [(&str, &str); 2] = [
    ("v1", "serviceaccounts"),
    ("rbac.authorization.k8s.io/v1", "rolebindings"),
];

fn agent(response: &Value) -> Container {
    pod_spec(response)
        .init_containers
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.name == "reload-agent")
        .expect("the reload agent runs")
}

#[test]
fn with_relate_pods_the_agent_gets_its_own_account_and_token() {
    let r = sync_with(&request(tls_spec(), &BOTH), &relate());
    let account: ServiceAccount = strict(child(&r, "ServiceAccount").expect("a ServiceAccount"));
    assert_eq!(
        account.metadata.name.as_deref(),
        Some("my-cache-reload-agent")
    );
    assert_eq!(account.automount_service_account_token, Some(false));
    let binding: RoleBinding = strict(child(&r, "RoleBinding").expect("a RoleBinding"));
    assert_eq!(
        binding.metadata.name.as_deref(),
        Some("my-cache-reload-agent")
    );
    assert_eq!(
        (
            binding.role_ref.kind.as_str(),
            binding.role_ref.name.as_str()
        ),
        ("ClusterRole", "memcached-hook-reload-agent")
    );
    let subjects = binding.subjects.unwrap_or_default();
    assert_eq!(subjects.len(), 1);
    assert_eq!(
        (subjects[0].kind.as_str(), subjects[0].name.as_str()),
        ("ServiceAccount", "my-cache-reload-agent")
    );
    assert_eq!(subjects[0].namespace.as_deref(), Some("default"));

    let pod = pod_spec(&r);
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("my-cache-reload-agent")
    );
    assert_eq!(pod.automount_service_account_token, Some(false));
    let agent = agent(&r);
    assert!(agent.args.iter().flatten().any(|a| a == "--pod-condition"));
    let env: Vec<(String, String)> = agent
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let path = e.value_from.and_then(|v| v.field_ref).map(|f| f.field_path);
            (e.name, path.unwrap_or_default())
        })
        .collect();
    assert_eq!(
        env,
        [
            ("POD_NAME".to_owned(), "metadata.name".to_owned()),
            ("POD_NAMESPACE".to_owned(), "metadata.namespace".to_owned())
        ]
    );
    let token_mount = "/var/run/secrets/kubernetes.io/serviceaccount";
    let mounted = |c: &Container| {
        c.volume_mounts
            .iter()
            .flatten()
            .any(|m| m.mount_path == token_mount && m.read_only == Some(true))
    };
    assert!(mounted(&agent), "the agent mounts its token");
    for c in &pod.containers {
        assert!(!mounted(c), "{} must not get the token", c.name);
    }
    let volume = pod
        .volumes
        .unwrap_or_default()
        .into_iter()
        .find(|v| v.name == "reload-agent-api")
        .and_then(|v| v.projected)
        .expect("the projected token volume");
    let sources = volume.sources.unwrap_or_default();
    assert!(sources.iter().any(|s| {
        s.service_account_token
            .as_ref()
            .is_some_and(|t| t.path == "token")
    }));
    assert!(sources.iter().any(|s| {
        s.config_map
            .as_ref()
            .is_some_and(|c| c.name == "kube-root-ca.crt")
    }));
}

#[test]
fn without_relate_pods_or_reloads_nothing_changes() {
    for (spec, options) in [
        (tls_spec(), Options::default()),
        (
            json!({"security": {"secretRotation": "RollingRestart", "tls": {"enabled": true,
                "certificateSecretRef": {"name": "certs"}}}}),
            relate(),
        ),
        (json!({"replicas": 1}), relate()),
    ] {
        let r = sync_with(&request(spec.clone(), &BOTH), &options);
        assert!(child(&r, "ServiceAccount").is_none(), "{spec}");
        assert!(child(&r, "RoleBinding").is_none(), "{spec}");
        assert_eq!(pod_spec(&r).service_account_name, None, "{spec}");
    }
}

#[test]
fn both_kinds_must_be_declared_or_the_agent_does_not_report() {
    let r = sync_with(&request(tls_spec(), &BOTH[..1]), &relate());
    assert!(child(&r, "ServiceAccount").is_none());
    assert!(child(&r, "RoleBinding").is_none());
    assert_eq!(pod_spec(&r).service_account_name, None);
    assert!(
        !agent(&r)
            .args
            .unwrap_or_default()
            .contains(&"--pod-condition".to_owned())
    );
    let missing = condition(&r, "ChildResourcesMissing");
    assert!(
        missing
            .message
            .contains("rolebindings.rbac.authorization.k8s.io"),
        "{missing:?}"
    );
    assert!(!missing.message.contains("serviceaccounts"), "{missing:?}");
}

fn pod(name: &str, reload: Option<(&str, &str)>) -> Value {
    let mut conditions = vec![json!({"type": "Ready", "status": "True"})];
    if let Some((status, message)) = reload {
        conditions.push(json!({"type": AGENT_TYPE, "status": status,
            "reason": if status == "True" { "Reloaded" } else { "ReloadFailed" },
            "message": message, "lastTransitionTime": "2026-11-26T08:00:00Z"}));
    }
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default"},
           "status": {"phase": "Running", "conditions": conditions}})
}

#[test]
fn a_pod_whose_agent_failed_makes_secret_reload_false() {
    let mut r = request(tls_spec(), &BOTH);
    r["related"]["Pod.v1"] = json!({
        "default/my-cache-a": pod("my-cache-a", Some(("True", "memcached took the mounted Secret (tls)"))),
        "default/my-cache-b": pod("my-cache-b", Some(("False", "tls: the certificate does not match the key"))),
    });
    let c = condition(&sync_with(&r, &relate()), "SecretReload");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "ReloadFailed")
    );
    assert_eq!(
        c.message,
        "The reload agent could not apply the mounted Secrets in 1 of 2 pods (my-cache-b: tls: \
         the certificate does not match the key); memcached there keeps the certificate and \
         password file it had"
    );
    // Recovered: every agent reports success, the condition is the spec's again.
    r["related"]["Pod.v1"]["default/my-cache-b"] = pod("my-cache-b", Some(("True", "ok")));
    let c = condition(&sync_with(&r, &relate()), "SecretReload");
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "InPlace"));
}

#[test]
fn customize_asks_for_the_pods_when_secrets_are_reloaded() {
    let parent = request(tls_spec(), &BOTH)["parent"].clone();
    let req = serde_json::from_value(json!({"controller": {}, "parent": parent})).expect("request");
    let answer = serde_json::to_value(memcached_hook::customize(&req, &relate()).expect("answer"))
        .expect("json");
    let rules = answer["relatedResources"].as_array().expect("a list");
    assert!(
        rules.iter().any(|r| r["resource"] == "pods"
            && r["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"] == "my-cache"),
        "{answer}"
    );
    let answer =
        serde_json::to_value(memcached_hook::customize(&req, &Options::default()).expect("answer"))
            .expect("json");
    assert!(!answer.to_string().contains("pods"), "{answer}");
}

/// The observed Deployment `my-cache` with 2 replicas, `updated` of them on the current
/// template (which names the agent's ServiceAccount when `named`), and the agent's
/// ServiceAccount and RoleBinding as observed children.
fn with_observed_account(spec: Value, updated: i64, named: bool) -> Value {
    let mut r = request(spec, &BOTH);
    let mut pod = json!({"containers": [{"name": "memcached"}]});
    if named {
        pod["serviceAccountName"] = json!("my-cache-reload-agent");
    }
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "my-cache", "namespace": "default", "generation": 2},
        "spec": {"replicas": 2, "template": {"spec": pod}},
        "status": {"observedGeneration": 2, "replicas": 2 + (2 - updated), "readyReplicas": 2,
                   "updatedReplicas": updated}});
    let meta = |kind: &str, api: &str| {
        json!({"apiVersion": api, "kind": kind,
        "metadata": {"name": "my-cache-reload-agent", "namespace": "default"}})
    };
    r["children"] = json!({
        "Deployment.apps/v1": {"my-cache": deployment},
        "ServiceAccount.v1": {"my-cache-reload-agent": meta("ServiceAccount", "v1")},
        "RoleBinding.rbac.authorization.k8s.io/v1": {"my-cache-reload-agent":
            meta("RoleBinding", "rbac.authorization.k8s.io/v1")},
    });
    r
}

#[test]
fn the_account_stays_until_no_pod_can_need_it() {
    let rolling = json!({"replicas": 2, "security": {"secretRotation": "RollingRestart",
        "tls": {"enabled": true, "certificateSecretRef": {"name": "certs"}}}});
    // The sync that ends reporting (RollingRestart): the observed template, all rolled out,
    // still names the account; its pods are about to be replaced.
    let r = sync_with(&with_observed_account(rolling.clone(), 2, true), &relate());
    assert!(
        child(&r, "ServiceAccount").is_some(),
        "kept while the template names it"
    );
    assert_eq!(
        pod_spec(&r).service_account_name,
        None,
        "the new template does not"
    );
    // Pods of the template that named the account are still being replaced: a ReplicaSet could
    // not create one of them without it.
    let r = sync_with(&with_observed_account(rolling.clone(), 1, false), &relate());
    assert!(
        child(&r, "ServiceAccount").is_some(),
        "kept during the rollout"
    );
    assert!(
        child(&r, "RoleBinding").is_some(),
        "kept during the rollout"
    );
    assert_eq!(
        pod_spec(&r).service_account_name,
        None,
        "the pods no longer use it"
    );
    // Rolled out: every pod runs a template without it.
    let r = sync_with(&with_observed_account(rolling, 2, false), &relate());
    assert!(
        child(&r, "ServiceAccount").is_none(),
        "dropped once rolled out"
    );
    assert!(
        child(&r, "RoleBinding").is_none(),
        "dropped once rolled out"
    );
    // The hook restarted without --relate-pods: the same.
    let r = sync_with(
        &with_observed_account(tls_spec(), 2, true),
        &Options::default(),
    );
    assert!(child(&r, "ServiceAccount").is_some());
    assert_eq!(pod_spec(&r).service_account_name, None);
    let r = sync_with(
        &with_observed_account(tls_spec(), 2, false),
        &Options::default(),
    );
    assert!(child(&r, "ServiceAccount").is_none());
}
