//! `spec.zones`: one full copy of the cache per zone, each pinned to its zone, with one
//! disruption budget per zone (docs/behaviour.md, "Zones").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::apiserver::{STATEFULSET_NAME_LENGTH, is_dns_label, is_label_value};
use super::check::{Out, Violation, quoted};
use super::{MemcachedSpec, Workload};

/// Fewest zones: one zone is no spread.
pub const MIN_ZONES: usize = 2;
/// Most zones.
pub const MAX_ZONES: usize = 16;
/// The node label that names a node's zone, unless `topologyKey` says otherwise.
pub const DEFAULT_TOPOLOGY_KEY: &str = "topology.kubernetes.io/zone";
/// Pod label naming the zone a pod runs in, set by the hook on the pods of each zone.
pub const ZONE_LABEL: &str = "memcached.c5c3.io/zone";
/// Longest `topologyKey` (a qualified name: a 253-character prefix, `/`, 63 characters).
pub const TOPOLOGY_KEY_LENGTH: usize = 317;
/// How long a zone may be short of ready pods before it stops blocking the other zones'
/// budgets, unless `outageTimeoutSeconds` says otherwise: 30 minutes, as Rook's
/// `OSDMaintenanceTimeout`.
pub const DEFAULT_OUTAGE_TIMEOUT_SECONDS: i32 = 1800;
/// Shortest `outageTimeoutSeconds`: a minute, longer than a pod's restart.
pub const MIN_OUTAGE_TIMEOUT_SECONDS: i32 = 60;
/// Longest `outageTimeoutSeconds`: a week.
pub const MAX_OUTAGE_TIMEOUT_SECONDS: i32 = 604_800;

/// The zones the cache runs in, each holding a full copy of it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZonesSpec {
    /// The zones, 2 to 16 unique values of the node label `topologyKey`. Each zone gets its own
    /// workload `<name>-<zone>` of `spec.replicas` pods (the count is per zone) and, with
    /// `highAvailability.podDisruptionBudget`, its own PodDisruptionBudget `<name>-<zone>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = MIN_ZONES, max = MAX_ZONES),
        extend("x-kubernetes-list-type" = "set")
    )]
    pub names: Option<Vec<String>>,

    /// The node label whose value is a node's zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = TOPOLOGY_KEY_LENGTH),
        extend("default" = DEFAULT_TOPOLOGY_KEY)
    )]
    pub topology_key: Option<String>,

    /// How long a zone may be short of ready pods (or have its budget let pods go) before it
    /// stops blocking the other zones' budgets: past it the zone counts as lost, its own budget
    /// keeps blocking, and the other zones' budgets follow the rule among themselves, so drains
    /// in the healthy zones go on. `status.zones[].shortSince` says since when a zone is short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = MIN_OUTAGE_TIMEOUT_SECONDS, max = MAX_OUTAGE_TIMEOUT_SECONDS),
        extend("default" = DEFAULT_OUTAGE_TIMEOUT_SECONDS)
    )]
    pub outage_timeout_seconds: Option<i32>,
}

/// `spec.zones` with every default applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zones<'a> {
    /// The zones, in the order the spec lists them.
    pub names: Vec<&'a str>,
    /// The node label naming the zone.
    pub topology_key: &'a str,
    /// Seconds a zone may be short before it stops blocking the other zones' budgets.
    pub outage_timeout_seconds: i32,
}

impl<'a> Zones<'a> {
    /// Resolves `spec.zones`: `None` without it or without a zone.
    #[must_use]
    pub fn of(spec: Option<&'a ZonesSpec>) -> Option<Self> {
        let spec = spec?;
        let names: Vec<&str> = spec.names.iter().flatten().map(String::as_str).collect();
        (!names.is_empty()).then(|| Self {
            names,
            topology_key: spec.topology_key.as_deref().unwrap_or(DEFAULT_TOPOLOGY_KEY),
            outage_timeout_seconds: spec
                .outage_timeout_seconds
                .unwrap_or(DEFAULT_OUTAGE_TIMEOUT_SECONDS),
        })
    }
}

/// The name of a zone's workload and disruption budget: `<name>-<zone>`.
#[must_use]
pub fn child_name(name: &str, zone: &str) -> String {
    format!("{name}-{zone}")
}

/// What a zone name must be besides a label value: it names the zone's workload, whose pods
/// need DNS-label host names.
const ZONE_NAME_DETAIL: &str = "must be a label value that makes <name>-<zone> a DNS-1123 \
    label (lower-case letters, digits and '-'): it names the zone's workload and its pods";

/// The rules of `spec.zones` for the Memcached `name`.
pub(super) fn validate(out: &mut Out, name: &str, spec: &MemcachedSpec) {
    let Some(zones) = &spec.zones else {
        return;
    };
    let names = zones.names.as_deref().unwrap_or_default();
    if names.len() < MIN_ZONES || names.len() > MAX_ZONES {
        out.push(Violation::invalid(
            "spec.zones.names",
            names.len(),
            format!("must list {MIN_ZONES} to {MAX_ZONES} zones"),
        ));
    }
    let longest = if spec.workload == Some(Workload::StatefulSet) {
        STATEFULSET_NAME_LENGTH
    } else {
        super::apiserver::DNS_LABEL_LENGTH
    };
    for (i, zone) in names.iter().enumerate().take(MAX_ZONES) {
        let field = format!("spec.zones.names[{i}]");
        let child = child_name(name, zone);
        if names[..i].contains(zone) {
            out.push(Violation::invalid(field, quoted(zone), "duplicate zone"));
        } else if zone.is_empty() || !is_label_value(zone) || !is_dns_label(&child) {
            out.push(Violation::invalid(field, quoted(zone), ZONE_NAME_DETAIL));
        } else if child.len() > longest {
            out.push(Violation::invalid(
                field,
                quoted(zone),
                format!("<name>-<zone> must be at most {longest} characters"),
            ));
        }
    }
    if let Some(seconds) = zones.outage_timeout_seconds
        && !(MIN_OUTAGE_TIMEOUT_SECONDS..=MAX_OUTAGE_TIMEOUT_SECONDS).contains(&seconds)
    {
        out.push(Violation::invalid(
            "spec.zones.outageTimeoutSeconds",
            seconds,
            format!(
                "must be {MIN_OUTAGE_TIMEOUT_SECONDS} to {MAX_OUTAGE_TIMEOUT_SECONDS} seconds \
                 (a minute to a week)"
            ),
        ));
    }
    if let Some(key) = zones.topology_key.as_deref()
        && !super::apiserver::is_qualified_name(key)
    {
        out.push(Violation::invalid(
            "spec.zones.topologyKey",
            quoted(key),
            "must be a label key",
        ));
    }
}

/// The fields `spec.zones` does not combine with: one HorizontalPodAutoscaler and one warm
/// restart layout per Memcached, and a pod label of the zone's.
pub(super) fn validate_rules(out: &mut Out, spec: &MemcachedSpec) {
    if spec.zones.is_none() {
        return;
    }
    if spec
        .autoscaling
        .as_ref()
        .is_some_and(|a| a.enabled == Some(true))
    {
        out.push(Violation::invalid(
            "spec.autoscaling.enabled",
            "true",
            "autoscaling does not combine with spec.zones",
        ));
    }
    if spec
        .pod_labels
        .as_ref()
        .is_some_and(|l| l.contains_key(ZONE_LABEL))
    {
        out.push(Violation::invalid(
            format!("spec.podLabels[{ZONE_LABEL}]"),
            quoted(ZONE_LABEL),
            "with spec.zones the hook sets this label to the pod's zone",
        ));
    }
    if spec
        .warm_restart
        .as_ref()
        .is_some_and(|w| w.enabled == Some(true))
    {
        out.push(Violation::invalid(
            "spec.warmRestart.enabled",
            "true",
            "warmRestart does not combine with spec.zones",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(names: &[&str]) -> MemcachedSpec {
        MemcachedSpec {
            zones: Some(ZonesSpec {
                names: Some(names.iter().map(|n| (*n).to_owned()).collect()),
                ..ZonesSpec::default()
            }),
            ..MemcachedSpec::default()
        }
    }

    fn violations(name: &str, spec: &MemcachedSpec) -> Vec<String> {
        let mut out = Vec::new();
        validate(&mut out, name, spec);
        validate_rules(&mut out, spec);
        out.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn zones_resolve_with_the_default_topology_key() {
        let s = spec(&["zone-a", "zone-b"]);
        let z = Zones::of(s.zones.as_ref()).expect("zones");
        assert_eq!(z.names, ["zone-a", "zone-b"]);
        assert_eq!(z.topology_key, "topology.kubernetes.io/zone");
        assert_eq!(Zones::of(None), None);
        assert_eq!(Zones::of(spec(&[]).zones.as_ref()), None);
    }

    #[test]
    fn zone_rules_name_the_field() {
        let cases: &[(&[&str], &str)] = &[
            (&["zone-a", "zone-b", "zone-c"], ""),
            (
                &["zone-a"],
                "spec.zones.names: Invalid value: 1: must list 2 to 16 zones",
            ),
            (
                &[],
                "spec.zones.names: Invalid value: 0: must list 2 to 16 zones",
            ),
            (
                &["zone-a", "zone-a"],
                "spec.zones.names[1]: Invalid value: \"zone-a\": duplicate zone",
            ),
            (
                &["zone-a", "Zone_B"],
                "spec.zones.names[1]: Invalid value: \"Zone_B\": must be",
            ),
            (
                &["zone-a", ""],
                "spec.zones.names[1]: Invalid value: \"\": must be",
            ),
            (
                &["zone-a", "-b"],
                "spec.zones.names[1]: Invalid value: \"-b\": must be",
            ),
        ];
        for (names, want) in cases {
            let got = violations("cache", &spec(names)).join("; ");
            if want.is_empty() {
                assert_eq!(got, "", "{names:?}");
            } else {
                assert!(got.starts_with(want), "{names:?}: {got}");
            }
        }
        let seventeen: Vec<String> = (0..17).map(|i| format!("z{i}")).collect();
        let names: Vec<&str> = seventeen.iter().map(String::as_str).collect();
        assert_eq!(
            violations("cache", &spec(&names)),
            ["spec.zones.names: Invalid value: 17: must list 2 to 16 zones"]
        );
    }

    #[test]
    fn the_child_name_fits_its_workload() {
        let zone = "z".repeat(50);
        let mut s = spec(&["a", &zone]);
        assert!(violations("cache", &s).is_empty());
        s.workload = Some(Workload::StatefulSet);
        let got = violations("cache", &s);
        assert_eq!(got.len(), 1);
        assert!(
            got[0].ends_with("<name>-<zone> must be at most 52 characters"),
            "{got:?}"
        );
        let mut s = spec(&["a", "b"]);
        s.pod_labels = Some([(ZONE_LABEL.to_owned(), "x".to_owned())].into());
        assert!(violations("cache", &s)[0].starts_with("spec.podLabels[memcached.c5c3.io/zone]"));
        let mut s = spec(&["a", "b"]);
        s.zones.as_mut().expect("zones").topology_key = Some("not a key".to_owned());
        assert_eq!(
            violations("cache", &s),
            ["spec.zones.topologyKey: Invalid value: \"not a key\": must be a label key"]
        );
    }
}
