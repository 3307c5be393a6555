//! `spec.highAvailability`: anti-affinity, topology spread, graceful shutdown and the
//! PodDisruptionBudget.

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::common::{
    base_selector, child, condition, memcached, pod_spec, render, strict, try_typed,
};

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
