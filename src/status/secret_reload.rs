//! The `SecretReload` condition: whether Secret changes reach the pods in place, and if not,
//! why ([`Security::rotation`](crate::api::security::Security), decided with the spec).

use super::SpecCondition;
use crate::api::effective::Effective;
use crate::api::security::Rotation;

const IN_PLACE: &str = "Changes to the certificate, key and password file are reloaded in place \
    by the reload-agent sidecar";
const ROLLS_ON_KEYS: &str = "a mounted key added to or removed from a Secret rolls the pods";
const ROLLS_ON_CA_OR_KEYS: &str =
    "a new ca.crt or a mounted key added to or removed from a Secret rolls the pods";
const ROLLING_RESTART: &str = "spec.security.secretRotation is RollingRestart: every change to a \
    referenced Secret rolls the pods";
const TOO_OLD: &str = "which reloading needs: every change to a referenced Secret rolls the pods";

/// The `SecretReload` condition of `e`; `None` without SASL and TLS.
#[must_use]
pub fn condition(e: &Effective<'_>) -> Option<SpecCondition> {
    Some(match e.security.rotation? {
        Rotation::Reload => {
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
