//! `auth`: the chart's SASL as the Memcached's, with what clients and the user must change.
//!
//! The chart's image ran memcached with `-S` (SASL over the binary protocol, from a sasldb);
//! the Memcached runs it with `-Y` (authentication over the ASCII protocol, from a file of
//! `user:password` lines), with which memcached refuses the binary protocol.

use serde_json::{Value, json};

use super::conversion::Conversion;
use super::release::Release;

/// The image's user when `auth.username` is empty.
const DEFAULT_USER: &str = "root";

/// The key of the chart's Secret that holds the password.
const PASSWORD_KEY: &str = "memcached-password";

/// What clients must change, printed whenever the release authenticated.
const CLIENTS_MUST_CHANGE: &str = "\
WARNING: clients must change how they log in. The release ran memcached with -S: SASL over
memcached's binary protocol. The Memcached authenticates over the ASCII (text) protocol (-Y,
spec.security.sasl), with the same user and password, and memcached then refuses the binary
protocol: a client that speaks the binary protocol or logs in with binary SASL is refused.
Every client must speak the ASCII protocol and log in first on each connection: a set of any
key whose value is `<user> <password>` (memcached's ASCII authentication).";

/// The SASL of the release, once read.
pub(super) struct Auth {
    /// The Secret in the hook's format, when the file holds the password.
    pub(super) secret: Option<Value>,
}

impl Conversion {
    /// `auth`: `spec.security.sasl` naming the Secret `<name>-sasl`, which the conversion
    /// writes when the file holds the password, else a printed step makes it from the release's
    /// Secret (`auth.existingPasswordSecret`, or the one the chart generated). An authenticated
    /// release never becomes an open cache.
    ///
    /// # Errors
    /// A user name that the hook's password file cannot hold.
    pub(super) fn auth(
        &mut self,
        release: &Release,
        name: &str,
        namespace: Option<&str>,
    ) -> anyhow::Result<Option<Auth>> {
        let enabled = self.take("auth.enabled") == Some(Value::Bool(true));
        let user = self.take("auth.username");
        let password = self.take("auth.password");
        let existing = self.take("auth.existingPasswordSecret");
        if !enabled {
            return Ok(None);
        }
        let user = user
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_USER)
            .to_owned();
        if user.contains([':', '\n', ' ']) {
            anyhow::bail!(
                "auth.username: {user:?} holds a colon, a space or a line break, which a \
                 password file of `user:password` lines cannot hold"
            );
        }
        let secret_name = format!("{name}-sasl");
        self.set(
            &["security", "sasl"],
            json!({"enabled": true, "credentialsSecretRef": {"name": secret_name}}),
        );
        self.notices.push(CLIENTS_MUST_CHANGE.to_owned());
        let existing = existing.as_ref().and_then(Value::as_str);
        let password = password.as_ref().and_then(Value::as_str);
        if let (None, Some(password)) = (existing, password) {
            return Ok(Some(Auth {
                secret: Some(json!({
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": secret_name},
                    "type": "Opaque",
                    "stringData": {"password-file": format!("{user}:{password}\n")},
                })),
            }));
        }
        let from = release.password_secret(existing);
        let whose = if existing.is_some() {
            "auth.existingPasswordSecret"
        } else {
            "the Secret the chart generated"
        };
        let ns = namespace.map(|n| format!("-n {n} ")).unwrap_or_default();
        self.notices.push(format!(
            "BEFORE APPLYING: the password is in {whose}, {from} (key {PASSWORD_KEY}). Create the \
             Memcached's Secret {secret_name} from it, as `user:password` under password-file \
             (user {user}); the Memcached's pods wait for it:\n  \
             kubectl {ns}create secret generic {secret_name} --from-literal=password-file=\"{user}:$(\
             kubectl {ns}get secret {from} -o jsonpath='{{.data.{PASSWORD_KEY}}}' | base64 -d)\""
        ));
        Ok(Some(Auth { secret: None }))
    }
}
