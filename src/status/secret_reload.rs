//! The `SecretReload` condition: whether Secret changes reach the pods in place, and if not,
//! why ([`Security::rotation`](crate::api::security::Security), decided with the spec); and,
//! when the pods are seen, whether each pod's reload agent applied the mounted Secrets (its
//! condition on the Pod, `children::agent_access`).

use super::SpecCondition;
use super::pods::{self, named};
use crate::api::bounds::cut;
use crate::api::effective::Effective;
use crate::api::security::Rotation;
use crate::children::own_image;
use crate::hook::{Observed, RelatedObject};

const IN_PLACE: &str = "Changes to the certificate, key and password file are reloaded in place \
    by the reload-agent sidecar";
const ROLLS_ON_KEYS: &str = "a mounted key added to or removed from a Secret rolls the pods";
const ROLLS_ON_CA_OR_KEYS: &str =
    "a new ca.crt or a mounted key added to or removed from a Secret rolls the pods";
const ROLLING_RESTART: &str = "spec.security.secretRotation is RollingRestart: every change to a \
    referenced Secret rolls the pods";
const TOO_OLD: &str = "which reloading needs: every change to a referenced Secret rolls the pods";
const FAILED: &str = "memcached there keeps the certificate and password file it had";
/// The longest part of one pod's message that is quoted.
const POD_MESSAGE: usize = 256;

/// The `SecretReload` condition of `e`; `None` without SASL and TLS. `related` are the related
/// objects of the sync: a related Pod of `namespace` whose reload agent reports a failure makes
/// it `False`. `agent_image` is the hook's `--reload-agent-image`: still the placeholder, it
/// makes the condition `False` (the pods cannot pull the agent).
#[must_use]
pub fn condition(
    e: &Effective<'_>,
    related: &Observed<RelatedObject>,
    namespace: &str,
    agent_image: &str,
) -> Option<SpecCondition> {
    Some(match e.security.rotation? {
        Rotation::Reload => {
            if own_image::is_placeholder(agent_image) {
                return Some(SpecCondition {
                    status: false,
                    reason: "AgentImagePlaceholder",
                    message: format!(
                        "The reload-agent image {agent_image} is a placeholder no node can pull: \
                         set the hook's --reload-agent-image (MEMCACHED_HOOK_RELOAD_AGENT_IMAGE) \
                         to the hook's own image"
                    ),
                });
            }
            if let Some(failed) = failed(related, namespace) {
                return Some(failed);
            }
            let client_cert = e.security.tls.is_some_and(|t| t.client_cert);
            let rolls = if client_cert {
                ROLLS_ON_CA_OR_KEYS
            } else {
                ROLLS_ON_KEYS
            };
            SpecCondition {
                status: true,
                reason: "InPlace",
                message: format!("{IN_PLACE}; {rolls}"),
            }
        }
        Rotation::RollingRestart => SpecCondition {
            status: false,
            reason: "RollingRestart",
            message: ROLLING_RESTART.to_owned(),
        },
        Rotation::TooOld(needs) => SpecCondition {
            status: false,
            reason: "MemcachedTooOld",
            message: format!(
                "Image {} runs a memcached older than {needs}, {TOO_OLD}",
                e.image
            ),
        },
    })
}

/// `ReloadFailed` when a related Pod's reload agent reports that it could not apply the mounted
/// Secrets; `None` when none does (or no pod was seen).
fn failed(related: &Observed<RelatedObject>, namespace: &str) -> Option<SpecCondition> {
    let mut seen = 0_usize;
    let mut failed: Vec<(&str, &str)> = Vec::new();
    for pod in related.iter().filter(|o| pods::is_pod_of(o, namespace)) {
        seen += 1;
        if let Some(report) = pod.reload.as_ref().filter(|r| !r.ok) {
            let message = report.message.as_deref().unwrap_or("no reason given");
            failed.push((pod.metadata.name.as_str(), message));
        }
    }
    if failed.is_empty() {
        return None;
    }
    failed.sort_unstable_by_key(|(p, _)| pods::order(p));
    let count = failed.len();
    let items = failed
        .into_iter()
        .map(|(p, why)| format!("{p}: {}", cut(why.trim(), POD_MESSAGE)));
    Some(SpecCondition {
        status: false,
        reason: "ReloadFailed",
        message: format!(
            "The reload agent could not apply the mounted Secrets in {count} of {seen} pods{}; \
             {FAILED}",
            named(items)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::ReloadReport;

    fn pod(name: &str, ns: &str, reload: Option<(bool, &str)>) -> RelatedObject {
        RelatedObject {
            reload: reload.map(|(ok, m)| ReloadReport {
                ok,
                message: Some(m.into()),
            }),
            ..pods::test_pod(name, ns)
        }
    }

    #[test]
    fn names_the_pods_whose_agent_failed_in_pod_order() {
        let related = Observed(vec![
            pod("c-10", "ns", Some((false, "tls: the key does not match"))),
            pod(
                "c-1",
                "ns",
                Some((true, "memcached took the mounted Secret (tls)")),
            ),
            pod("c-2", "ns", Some((false, " auth: login refused\n"))),
            pod("c-3", "ns", None),
            pod("c-4", "other", Some((false, "not ours"))),
        ]);
        let c = failed(&related, "ns").expect("two pods failed");
        assert!(!c.status);
        assert_eq!(c.reason, "ReloadFailed");
        assert_eq!(
            c.message,
            "The reload agent could not apply the mounted Secrets in 2 of 4 pods (c-2: auth: \
             login refused, c-10: tls: the key does not match); memcached there keeps the \
             certificate and password file it had"
        );
    }

    #[test]
    fn no_failure_reported_is_no_condition() {
        let related = Observed(vec![
            pod("c-0", "ns", Some((true, "ok"))),
            pod("c-1", "ns", None),
        ]);
        assert_eq!(failed(&related, "ns"), None);
        assert_eq!(failed(&Observed(Vec::new()), "ns"), None);
    }

    #[test]
    fn a_long_message_is_cut_on_a_character_boundary() {
        let long = "é".repeat(200);
        let short = cut(&long, POD_MESSAGE);
        assert_eq!(short.len(), POD_MESSAGE);
        assert!(long.starts_with(short));
        let odd = format!("x{long}");
        assert_eq!(cut(&odd, POD_MESSAGE).len(), POD_MESSAGE - 1);
    }
}
