//! The memcached command line: the reference operator's flags in its order, plus explicit
//! plaintext and TLS listeners when TLS is on (docs/behaviour.md).

use crate::api::effective::Effective;

use super::ports::{MEMCACHED, MEMCACHED_TLS};
use super::{SASL_MOUNT_PATH, TLS_MOUNT_PATH};

/// The address every listener binds to: memcached's own "any address", dual stack (`0.0.0.0` is
/// IPv4 only, `[::]` IPv6 only); tested with a real memcached in `tests/peers/FINDINGS.md`.
pub const LISTEN_ADDRESS: &str = "*";

/// The argument list, every flag and value its own element, in the reference order:
/// `-m -c -t -I`, verbosity, SASL, TLS (with explicit listeners), then `extraArgs` verbatim.
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
        args.extend(["-Y".to_owned(), format!("{SASL_MOUNT_PATH}/password-file")]);
    }
    if let Some(tls) = e.security.tls {
        args.extend([
            "-Z".to_owned(),
            "-o".to_owned(),
            format!("ssl_chain_cert={TLS_MOUNT_PATH}/tls.crt"),
            "-o".to_owned(),
            format!("ssl_key={TLS_MOUNT_PATH}/tls.key"),
        ]);
        if tls.client_cert {
            args.extend([
                "-o".to_owned(),
                format!("ssl_ca_cert={TLS_MOUNT_PATH}/ca.crt"),
                "-o".to_owned(),
                "ssl_verify_mode=2".to_owned(),
            ]);
        }
        // With -Z every listener speaks TLS unless prefixed `notls:`; keep 11211 plaintext for
        // probes, the exporter and in-cluster clients, and really listen on 11212 for TLS.
        args.extend([
            "-l".to_owned(),
            format!("notls:{LISTEN_ADDRESS}:{}", MEMCACHED.number),
            "-l".to_owned(),
            format!("{LISTEN_ADDRESS}:{}", MEMCACHED_TLS.number),
        ]);
    }
    args.extend(e.memcached.extra_args.iter().cloned());
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{MemcachedConfig, MemcachedSpec};

    fn args_of(spec: &MemcachedSpec) -> Vec<String> {
        memcached(&Effective::of(spec))
    }

    #[test]
    fn defaults() {
        assert_eq!(
            args_of(&MemcachedSpec::default()),
            ["-m", "64", "-c", "1024", "-t", "4", "-I", "1m"]
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
                "--max-reqs-per-event",
                "20"
            ]
        );
        let v1 = spec(MemcachedConfig {
            verbosity: Some(1),
            ..MemcachedConfig::default()
        });
        assert_eq!(args_of(&v1)[8..], ["-v"]);
        let v0 = spec(MemcachedConfig {
            verbosity: Some(0),
            extra_args: Some(vec![]),
            ..MemcachedConfig::default()
        });
        assert_eq!(args_of(&v0).len(), 8);
    }
}
