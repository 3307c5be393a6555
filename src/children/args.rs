//! The memcached command line: the reference operator's flags in its order, plus explicit
//! plaintext and TLS listeners when TLS is on (docs/behaviour.md).

use crate::api::effective::Effective;
use crate::api::security::Tls;

use super::ports::{LOOPBACK_PLAINTEXT, MEMCACHED, MEMCACHED_TLS};
use super::{AUTH_COPY_FILE, TLS_MOUNT_PATH};

/// The address every listener binds to: memcached's own "any address", dual stack (`0.0.0.0` is
/// IPv4 only, `[::]` IPv6 only); tested with a real memcached in `tests/peers/FINDINGS.md`.
pub const LISTEN_ADDRESS: &str = "*";

/// The argument list, every flag and value its own element, in the reference order:
/// `-m -c -t -I`, verbosity, SASL, TLS (with its minimum version and explicit listeners), then
/// the refused commands (`-F -X -W`), extstore's `-o` and `extraArgs` verbatim.
#[must_use]
pub fn memcached(e: &Effective<'_>) -> Vec<String> {
    let mut args = vec![
        "-m".to_owned(),
        e.memcached.max_memory_mb.to_string(),
        "-c".to_owned(),
        e.memcached.max_connections.to_string(),
        "-t".to_owned(),
        e.memcached.threads.to_string(),
        "-I".to_owned(),
        e.memcached.max_item_size.to_owned(),
    ];
    match e.memcached.verbosity {
        1 => args.push("-v".to_owned()),
        2 => args.push("-vv".to_owned()),
        _ => {}
    }
    if e.security.sasl_secret.is_some() {
        args.extend(["-Y".to_owned(), AUTH_COPY_FILE.to_owned()]);
    }
    if let Some(tls) = e.security.tls {
        args.extend(tls_args(tls));
        // With -Z every listener speaks TLS unless prefixed `notls:`. By default TLS on 11211
        // (the reference operator's clients) and 11212 (this hook's earlier layout), plaintext
        // only on the pod's loopback; with allowPlaintext, plaintext 11211 and TLS 11212.
        if tls.allow_plaintext {
            args.extend([
                "-l".to_owned(),
                format!("notls:{LISTEN_ADDRESS}:{}", MEMCACHED.number),
                "-l".to_owned(),
                format!("{LISTEN_ADDRESS}:{}", MEMCACHED_TLS.number),
            ]);
        } else {
            args.extend([
                "-l".to_owned(),
                format!("{LISTEN_ADDRESS}:{}", MEMCACHED.number),
                "-l".to_owned(),
                format!("{LISTEN_ADDRESS}:{}", MEMCACHED_TLS.number),
                "-l".to_owned(),
                format!("notls:127.0.0.1:{LOOPBACK_PLAINTEXT}"),
            ]);
        }
    }
    args.extend(e.memcached.hardening.flags().map(str::to_owned));
    if let Some(x) = &e.extstore {
        args.extend(["-o".to_owned(), x.option()]);
    }
    args.extend(e.memcached.extra_args.iter().cloned());
    args
}

/// memcached's TLS flags for `tls`: the certificate and key from the mounted Secret, the
/// minimum version, and with client certificates the CA and a required verification.
pub(super) fn tls_args(tls: Tls<'_>) -> Vec<String> {
    let mut args = vec![
        "-Z".to_owned(),
        "-o".to_owned(),
        format!("ssl_chain_cert={TLS_MOUNT_PATH}/tls.crt"),
        "-o".to_owned(),
        format!("ssl_key={TLS_MOUNT_PATH}/tls.key"),
        "-o".to_owned(),
        format!("ssl_min_version={}", tls.min_version.ssl_min_version()),
    ];
    if tls.client_cert {
        args.extend([
            "-o".to_owned(),
            format!("ssl_ca_cert={TLS_MOUNT_PATH}/ca.crt"),
            "-o".to_owned(),
            "ssl_verify_mode=2".to_owned(),
        ]);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{HardeningSpec, MemcachedConfig, MemcachedSpec};

    fn args_of(spec: &MemcachedSpec) -> Vec<String> {
        memcached(&Effective::of(spec))
    }

    #[test]
    fn defaults() {
        assert_eq!(
            args_of(&MemcachedSpec::default()),
            ["-m", "64", "-c", "1024", "-t", "4", "-I", "1m", "-X", "-W"]
        );
    }

    #[test]
    fn each_setting_and_verbosity() {
        let spec = |config: MemcachedConfig| MemcachedSpec {
            memcached: Some(config),
            ..MemcachedSpec::default()
        };
        let all = spec(MemcachedConfig {
            max_memory_mb: Some(256),
            max_connections: Some(2048),
            threads: Some(8),
            max_item_size: Some("2m".into()),
            verbosity: Some(2),
            extra_args: Some(vec!["--max-reqs-per-event".into(), "20".into()]),
            hardening: Some(HardeningSpec {
                disable_flush_all: Some(true),
                ..HardeningSpec::default()
            }),
        });
        assert_eq!(
            args_of(&all),
            [
                "-m",
                "256",
                "-c",
                "2048",
                "-t",
                "8",
                "-I",
                "2m",
                "-vv",
                "-F",
                "-X",
                "-W",
                "--max-reqs-per-event",
                "20"
            ]
        );
        let v1 = spec(MemcachedConfig {
            verbosity: Some(1),
            ..MemcachedConfig::default()
        });
        assert_eq!(args_of(&v1)[8..], ["-v", "-X", "-W"]);
        let v0 = spec(MemcachedConfig {
            verbosity: Some(0),
            extra_args: Some(vec![]),
            ..MemcachedConfig::default()
        });
        assert_eq!(args_of(&v0).len(), 10);
    }

    #[test]
    fn tls_names_its_minimum_version_as_a_number() {
        let tls = |min_version| {
            let spec: MemcachedSpec = serde_json::from_value(serde_json::json!({
                "security": {"tls": {"enabled": true, "certificateSecretRef": {"name": "t"},
                                     "minVersion": min_version}}
            }))
            .expect("spec");
            args_of(&spec)
        };
        let has = |args: &[String], value: &str| args.windows(2).any(|w| w == ["-o", value]);
        assert!(has(&tls(serde_json::Value::Null), "ssl_min_version=2"));
        assert!(has(&tls("TLSv1.2".into()), "ssl_min_version=2"));
        assert!(has(&tls("TLSv1.3".into()), "ssl_min_version=3"));
    }
}
