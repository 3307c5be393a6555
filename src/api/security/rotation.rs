//! How a changed SASL or TLS Secret reaches the pods, decided once from `spec.security` and the
//! image ([`Security::rotation`]): the pod template (whether the reload agent runs), the
//! secret-hash annotation (what it covers of each key) and the `SecretReload` condition all read
//! this one decision.

use super::{SecretRotation, Security};

/// How changes to the referenced Secrets reach the pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// The reload agent reloads them in place.
    Reload,
    /// `secretRotation: RollingRestart`: the pods roll.
    RollingRestart,
    /// `Reload` asked, but the image's memcached predates the reload it needs (`1.5.13` for
    /// `refresh_certs`, `1.5.15` for SIGHUP re-reading `-Y`): the pods roll.
    TooOld(&'static str),
}

/// What the secret-hash annotation covers of one key of a Secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cover {
    /// Its content: a change rolls the pods.
    Content,
    /// Only that it is there (a mounted key whose content the reload agent reloads in place).
    Presence,
    /// Nothing (a key that is not mounted, under `secretRotation: Reload`).
    Skip,
}

/// `major.minor[.patch]` at the start of the image tag (`1.6.38`, `1.5-alpine`); `None` for a
/// digest, no tag or another tag (`latest`), which are taken to be recent.
fn tag_version(image: &str) -> Option<(u32, u32, u32)> {
    if image.contains('@') {
        return None;
    }
    let (_, tag) = image.rsplit_once(':')?;
    if tag.contains('/') {
        return None; // a registry port, no tag
    }
    let numeric = tag.split(['-', '_']).next()?;
    let mut parts = numeric.split('.').map(str::parse::<u32>);
    let major = parts.next()?.ok()?;
    let minor = parts.next()?.ok()?;
    // `1.5` names the newest 1.5.x
    let patch = match parts.next() {
        Some(p) => p.ok()?,
        None => u32::MAX,
    };
    Some((major, minor, patch))
}

impl Rotation {
    /// How Secret changes reach pods running `image` under `asked`; `None` without SASL and TLS.
    pub(super) fn of(asked: SecretRotation, sasl: bool, tls: bool, image: &str) -> Option<Self> {
        if !sasl && !tls {
            return None;
        }
        if asked == SecretRotation::RollingRestart {
            return Some(Self::RollingRestart);
        }
        let (needs, version) = if sasl {
            ("1.5.15", (1, 5, 15))
        } else {
            ("1.5.13", (1, 5, 13))
        };
        Some(match tag_version(image) {
            Some(v) if v < version => Self::TooOld(needs),
            _ => Self::Reload,
        })
    }
}

impl Security<'_> {
    /// Whether the pods run the reload agent, which reloads Secret changes in place.
    #[must_use]
    pub fn reloads(&self) -> bool {
        self.rotation == Some(Rotation::Reload)
    }

    /// What the secret-hash annotation covers of `key` in `secret`. When the reload agent runs
    /// it applies new content of the mounted certificate, key and password file, so only their
    /// presence counts; `ca.crt` keeps its content in the hash, because memcached adds a
    /// reloaded CA to the trusted ones and never drops the old one (only a restart does); keys
    /// that are not mounted do not count. Otherwise every key's content counts, as the
    /// reference operator does.
    #[must_use]
    pub fn cover(&self, secret: &str, key: &str) -> Cover {
        if !self.reloads() {
            return Cover::Content;
        }
        if let Some(tls) = self.tls.filter(|t| t.secret_name == secret) {
            match key {
                "ca.crt" if tls.client_cert => return Cover::Content,
                "tls.crt" | "tls.key" => return Cover::Presence,
                _ => {}
            }
        }
        if self.sasl_secret == Some(secret) && key == "password-file" {
            return Cover::Presence;
        }
        Cover::Skip
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags() {
        assert_eq!(tag_version("memcached:1.6.38"), Some((1, 6, 38)));
        assert_eq!(tag_version("memcached:1.5.12-alpine"), Some((1, 5, 12)));
        assert_eq!(tag_version("memcached:1.6"), Some((1, 6, u32::MAX)));
        for none in [
            "memcached",
            "memcached:latest",
            "host:5000/memcached",
            "memcached:1.6@sha256:ab",
        ] {
            assert_eq!(tag_version(none), None, "{none}");
        }
    }

    #[test]
    fn too_old_images_fall_back_to_rolling_restarts() {
        let spec = |image: &str, sasl: bool| -> crate::api::MemcachedSpec {
            let mut security = serde_json::json!({"tls": {"enabled": true, "certificateSecretRef": {"name": "t"}}});
            if sasl {
                security["sasl"] =
                    serde_json::json!({"enabled": true, "credentialsSecretRef": {"name": "s"}});
            }
            serde_json::from_value(serde_json::json!({"image": image, "security": security}))
                .unwrap()
        };
        let of = |image: &str, sasl: bool| {
            let spec = spec(image, sasl);
            crate::api::effective::Effective::of(&spec)
                .security
                .rotation
        };
        assert_eq!(of("memcached:1.6.18", true), Some(Rotation::Reload));
        assert_eq!(of("memcached:1.5.14", false), Some(Rotation::Reload));
        assert_eq!(
            of("memcached:1.5.14", true),
            Some(Rotation::TooOld("1.5.15"))
        );
        assert_eq!(
            of("memcached:1.5.12", false),
            Some(Rotation::TooOld("1.5.13"))
        );
        assert_eq!(of("memcached:latest", true), Some(Rotation::Reload));
        assert_eq!(Security::of(None, "memcached:1.6").rotation, None);
    }

    #[test]
    fn the_hash_covers_what_the_agent_does_not_reload() {
        let tls = super::super::Tls {
            secret_name: "t",
            client_cert: true,
            allow_plaintext: false,
            min_version: super::super::TlsVersion::default(),
        };
        let reload = Security {
            sasl_secret: Some("s"),
            tls: Some(tls),
            rotation: Some(Rotation::Reload),
            ..Security::default()
        };
        assert_eq!(reload.cover("t", "tls.crt"), Cover::Presence);
        assert_eq!(reload.cover("t", "ca.crt"), Cover::Content);
        assert_eq!(reload.cover("s", "password-file"), Cover::Presence);
        assert_eq!(reload.cover("s", "other"), Cover::Skip);
        for rotation in [Rotation::RollingRestart, Rotation::TooOld("1.5.15")] {
            let rolls = Security {
                rotation: Some(rotation),
                ..reload
            };
            assert_eq!(rolls.cover("t", "tls.crt"), Cover::Content);
            assert_eq!(rolls.cover("s", "other"), Cover::Content);
        }
    }
}
