//! Secret rotation: what the secret-hash annotation covers, and the `SecretReload` condition.

use crate::api::effective::Effective;
use crate::secrets;
use crate::status::SpecCondition;

/// The `SecretReload` condition: whether Secret changes reach the pods in place, and if not, why.
pub(super) fn rotation_status(
    e: &Effective<'_>,
    r: crate::children::reload_agent::Rotation,
) -> SpecCondition {
    use crate::children::reload_agent::Rotation;
    match r {
        Rotation::Reload => SpecCondition {
            status: true,
            reason: "InPlace",
            message: format!(
                "Changes to the certificate, key and password file are reloaded in place by the reload-agent sidecar; {} rolls the pods",
                if e.security.tls.is_some_and(|t| t.client_cert) {
                    "a new ca.crt or a mounted key added to or removed from a Secret"
                } else {
                    "a mounted key added to or removed from a Secret"
                }
            ),
        },
        Rotation::RollingRestart => SpecCondition {
            status: false,
            reason: "RollingRestart",
            message: "spec.security.secretRotation is RollingRestart: every change to a referenced Secret rolls the pods".to_owned(),
        },
        Rotation::TooOld(needs) => SpecCondition {
            status: false,
            reason: "MemcachedTooOld",
            message: format!(
                "Image {} runs a memcached older than {needs}, which reloading needs: every change to a referenced Secret rolls the pods",
                e.image
            ),
        },
    }
}

/// What the secret-hash annotation covers of `key` in `secret`. Under `secretRotation: Reload`
/// the reload agent applies new content of the mounted certificate, key and password file, so
/// only their presence counts; `ca.crt` keeps its content in the hash, because memcached adds a
/// reloaded CA to the trusted ones and never drops the old one (only a restart does); keys that
/// are not mounted do not count. `RollingRestart` covers every key, as the reference does.
pub(super) fn rotation_cover(e: &Effective<'_>, secret: &str, key: &str) -> secrets::Cover {
    use secrets::Cover;
    if !crate::children::reload_agent::applies(e) {
        return Cover::Content;
    }
    if let Some(tls) = e.security.tls.filter(|t| t.secret_name == secret) {
        match key {
            "ca.crt" if tls.client_cert => return Cover::Content,
            "tls.crt" | "tls.key" => return Cover::Presence,
            _ => {}
        }
    }
    if e.security.sasl_secret == Some(secret) && key == "password-file" {
        return Cover::Presence;
    }
    Cover::Skip
}
