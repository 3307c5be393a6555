//! Secrets behind SASL and TLS: which ones the customize hook asks Metacontroller for, the
//! `memcached.c5c3.io/secret-hash` pod annotation and which are missing.

use base64::Engine as _;
use k8s_openapi::Resource as _;
use k8s_openapi::api::core::v1::Secret;
use sha2::{Digest, Sha256};

use crate::api::security::{Cover, Security};
use crate::hook::{Observed, RelatedObject};

/// A Secret found among the related objects, with its data decoded.
struct Found<'a> {
    name: &'a str,
    data: Vec<(&'a str, Vec<u8>)>,
}

fn find<'a>(
    related: &'a Observed<RelatedObject>,
    namespace: &str,
    name: &str,
) -> Option<Found<'a>> {
    let secret = related.iter().find(|o| {
        o.kind == Secret::KIND
            && o.api_version == Secret::API_VERSION
            && o.metadata.name == name
            && o.metadata
                .namespace
                .as_deref()
                .is_none_or(|ns| ns == namespace)
    })?;
    let mut data = Vec::new();
    for (key, value) in secret.data.iter().flatten() {
        // A value that is not base64 cannot have come from the API server: treat the Secret as
        // unreadable, which the reference counts as missing.
        data.push((
            key.as_str(),
            base64::engine::general_purpose::STANDARD
                .decode(value)
                .ok()?,
        ));
    }
    data.sort_by(|a, b| a.0.cmp(b.0));
    Some(Found {
        name: secret.metadata.name.as_str(),
        data,
    })
}

/// The hash annotation value and the sorted names of missing Secrets among those `security`
/// references, each key covered as [`Security::cover`] says.
#[must_use]
pub fn hash_and_missing(
    security: &Security<'_>,
    related: &Observed<RelatedObject>,
    namespace: &str,
) -> (Option<String>, Vec<String>) {
    let mut hasher = Sha256::new();
    let mut hashed_any = false;
    let mut missing = Vec::new();
    // `secrets()` is sorted, so found Secrets are hashed in name order.
    for name in security.secrets() {
        match find(related, namespace, name) {
            Some(found) => {
                for (key, value) in &found.data {
                    let covered = security.cover(found.name, key);
                    if covered == Cover::Skip {
                        continue;
                    }
                    hasher.update(found.name.as_bytes());
                    hasher.update([0]);
                    hasher.update(key.as_bytes());
                    hasher.update([0]);
                    match covered {
                        Cover::Content => hasher.update(value),
                        // Two NULs: cannot be read as a key with content.
                        _ => hasher.update([0]),
                    }
                    hashed_any = true;
                }
            }
            None => missing.push(name.to_owned()),
        }
    }
    let hash = hashed_any.then(|| hex::encode(hasher.finalize()));
    (hash, missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn related(secrets: &[(&str, &[(&str, &str)])]) -> Observed<RelatedObject> {
        let map: serde_json::Map<String, serde_json::Value> = secrets
            .iter()
            .map(|(name, data)| {
                let data: serde_json::Map<String, serde_json::Value> = data
                    .iter()
                    .map(|(k, v)| {
                        let encoded = base64::engine::general_purpose::STANDARD.encode(v);
                        ((*k).to_owned(), encoded.into())
                    })
                    .collect();
                (
                    (*name).to_owned(),
                    serde_json::json!({
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {"name": name, "namespace": "ns"},
                        "data": data
                    }),
                )
            })
            .collect();
        serde_json::from_value(serde_json::json!({ "Secret.v1": map })).unwrap()
    }

    /// SASL and TLS with the Secrets `sasl` and `tls`, every key's content covered
    /// (`secretRotation: RollingRestart`), as the reference operator hashes.
    fn rolling<'a>(sasl: Option<&'a str>, tls: Option<&'a str>) -> Security<'a> {
        use crate::api::security::{Rotation, Tls, TlsVersion};
        Security {
            sasl_secret: sasl,
            tls: tls.map(|secret_name| Tls {
                secret_name,
                client_cert: false,
                allow_plaintext: false,
                min_version: TlsVersion::default(),
            }),
            rotation: Some(Rotation::RollingRestart),
            ..Security::default()
        }
    }

    #[test]
    fn reference_hash_vectors() {
        type Secrets<'a> = &'a [(&'a str, &'a [(&'a str, &'a str)])];
        let cases: [(Security<'_>, Secrets<'_>, &str); 5] = [
            (
                rolling(Some("test-sasl-credentials"), None),
                &[(
                    "test-sasl-credentials",
                    &[("password-file", "testuser:testpassword")],
                )],
                "6ab9e62664ad1e9f57e90da645752b15b5faae2832cfb34a12124d74c226cafa",
            ),
            (
                rolling(Some("sasl-secret"), None),
                &[("sasl-secret", &[("password-file", "pw")])],
                "5c079a91d0bde60e232cb94cb2aa76a1543ee9448537f25ba81f555938656bac",
            ),
            (
                rolling(Some("sasl-secret"), None),
                &[("sasl-secret", &[("password-file", "rotated")])],
                "f42d557a7f0e7e217a505450c02972584c4972f065f6bb7c8d949ffaeaee9a95",
            ),
            (
                rolling(Some("sasl-secret"), Some("tls-secret")),
                &[
                    (
                        "tls-secret",
                        &[("tls.key", "key-data"), ("tls.crt", "cert-data")],
                    ),
                    ("sasl-secret", &[("password-file", "pw")]),
                ],
                "6d7c4f85888749271ca643e95d46c086092c9c9030bb072b5d4ea7fd9c63ad2f",
            ),
            (
                rolling(Some("shared"), Some("shared")),
                &[(
                    "shared",
                    &[("password-file", "pw"), ("tls.crt", "c"), ("tls.key", "k")],
                )],
                "30e7df1582b3d64391243d961116696780e7cb13a530a2c3e70236b0e480569c",
            ),
        ];
        for (security, secrets, want) in cases {
            let (hash, missing) = hash_and_missing(&security, &related(secrets), "ns");
            assert_eq!(hash.as_deref(), Some(want), "{:?}", security.secrets());
            assert!(missing.is_empty());
        }
    }

    #[test]
    fn missing_secrets_are_sorted_and_empty_data_hashes_to_nothing() {
        let both = rolling(Some("b-secret"), Some("a-secret"));
        let (hash, missing) = hash_and_missing(&both, &related(&[]), "ns");
        assert_eq!(
            (hash, missing),
            (None, vec!["a-secret".to_owned(), "b-secret".to_owned()])
        );
        let empty = rolling(Some("empty"), None);
        let (hash, missing) = hash_and_missing(&empty, &related(&[("empty", &[])]), "ns");
        assert_eq!((hash, missing), (None, vec![]));
    }
}
