//! `spec.security`: security contexts, SASL, TLS and the NetworkPolicy.

use super::bounded::Bounded;
use k8s_openapi::api::core::v1::{PodSecurityContext, SecurityContext};
use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds;
use super::check::{self, Out, Violation, quoted};
use super::command_line::{CommandLine, atoi};
use super::pod;

mod rotation;

pub use rotation::{Cover, Rotation};

/// Entries of `networkPolicy.allowedSources`.
pub const ALLOWED_SOURCES: usize = 64;
/// The CEL rule: an enabled SASL block names its Secret.
pub const SASL_SECRET_RULE: &str = "!has(self.enabled) || !self.enabled || \
    (has(self.credentialsSecretRef) && has(self.credentialsSecretRef.name) && \
    self.credentialsSecretRef.name != '')";
/// The message of [`SASL_SECRET_RULE`].
pub const SASL_SECRET_MESSAGE: &str = "credentialsSecretRef.name is required when SASL is enabled";
/// The CEL rule: an enabled TLS block names its Secret.
pub const TLS_SECRET_RULE: &str = "!has(self.enabled) || !self.enabled || \
    (has(self.certificateSecretRef) && has(self.certificateSecretRef.name) && \
    self.certificateSecretRef.name != '')";
/// The message of [`TLS_SECRET_RULE`].
pub const TLS_SECRET_MESSAGE: &str = "certificateSecretRef.name is required when TLS is enabled";

/// Security settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecuritySpec {
    /// Pod security context: each field set here replaces the hook's default of that field
    /// (non-root, the user of `defaultUser`, seccomp `RuntimeDefault`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_security_context: Option<PodSecurityContext>,
    /// Container security context, applied to every container: each field set here replaces
    /// the hook's default of that field (no privilege escalation, every capability dropped, a
    /// read-only root filesystem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_security_context: Option<SecurityContext>,
    /// The user the pods run as when the security contexts name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Memcached"))]
    pub default_user: Option<DefaultUser>,
    /// SASL (ASCII authentication file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sasl: Option<SaslSpec>,
    /// TLS and mutual TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSpec>,
    /// NetworkPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<NetworkPolicySpec>,
    /// How a changed SASL or TLS Secret reaches running pods: `Reload` (a reload-agent sidecar
    /// reloads the certificate, key and password file in place; the cache stays) or
    /// `RollingRestart` (the pods roll, the cache is emptied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Reload"))]
    pub secret_rotation: Option<SecretRotation>,
}

/// The user the pods run as when the security contexts name none: `Memcached` (uid and gid
/// 11211, the official image's `memcache` user) or `Platform` (`runAsUser`, `runAsGroup` and
/// `fsGroup` left unset, for a platform that assigns them, such as OpenShift's `restricted-v2`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DefaultUser {
    /// uid and gid 11211 (the official memcached image's `memcache` user).
    #[default]
    Memcached,
    /// No user, group or fsGroup: the platform assigns them (OpenShift's `restricted-v2`).
    Platform,
}

/// How Secret changes reach running pods.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum SecretRotation {
    /// Reload in place (memcached `refresh_certs`, SIGHUP for the auth file).
    #[default]
    Reload,
    /// Roll the pods (the secret-hash pod annotation covers every key of the Secrets).
    RollingRestart,
}

/// Reference to a Secret in the Memcached's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct SecretRef {
    /// Name of the Secret: a DNS subdomain of at most 253 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = bounds::SECRET_NAME_LENGTH),
        regex(pattern = pod::SECRET_NAME_PATTERN),
        extend("default" = "")
    )]
    pub name: Option<String>,
}

/// SASL settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": SASL_SECRET_RULE,
    "message": SASL_SECRET_MESSAGE,
    "fieldPath": ".credentialsSecretRef",
    "reason": "FieldValueRequired"
}]))]
#[serde(rename_all = "camelCase")]
pub struct SaslSpec {
    /// Turn SASL (memcached `-Y`) on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Secret with the key `password-file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret_ref: Option<SecretRef>,
}

/// TLS settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": TLS_SECRET_RULE,
    "message": TLS_SECRET_MESSAGE,
    "fieldPath": ".certificateSecretRef",
    "reason": "FieldValueRequired"
}]))]
#[serde(rename_all = "camelCase")]
pub struct TlsSpec {
    /// Turn TLS on: TLS on 11211 and 11212 (plaintext only on the pod's loopback), or with
    /// `allowPlaintext` plaintext on 11211 and TLS on 11212.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Secret with the keys `tls.crt`, `tls.key` and (for client certificates) `ca.crt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_secret_ref: Option<SecretRef>,
    /// Require client certificates signed by `ca.crt` (mutual TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_client_cert: Option<bool>,
    /// Keep a plaintext port (11211) reachable from outside the pod besides TLS on 11212 (for a
    /// migration); by default no plaintext port is reachable from outside the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub allow_plaintext: Option<bool>,
    /// The oldest TLS version memcached accepts (`-o ssl_min_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "TLSv1.2"))]
    pub min_version: Option<TlsVersion>,
}

/// The oldest TLS version memcached accepts (`-o ssl_min_version`), spelled as OpenSSL names it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum TlsVersion {
    /// TLS 1.2 (and 1.3).
    #[default]
    #[serde(rename = "TLSv1.2")]
    Tls12,
    /// TLS 1.3 only.
    #[serde(rename = "TLSv1.3")]
    Tls13,
}

impl TlsVersion {
    /// memcached's `ssl_min_version` value: a number (1.6.18 refuses names such as `tlsv1.2`).
    #[must_use]
    pub const fn ssl_min_version(self) -> &'static str {
        match self {
            Self::Tls12 => "2",
            Self::Tls13 => "3",
        }
    }
}

/// NetworkPolicy settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// Emit a NetworkPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Allowed peers; empty or absent allows every source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = ALLOWED_SOURCES))]
    pub allowed_sources: Option<Bounded<NetworkPolicyPeer, ALLOWED_SOURCES>>,
}

/// TLS, when enabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tls<'a> {
    /// Secret with `tls.crt`, `tls.key` (and `ca.crt`).
    pub secret_name: &'a str,
    /// Require client certificates.
    pub client_cert: bool,
    /// Plaintext 11211 reachable from outside the pod.
    pub allow_plaintext: bool,
    /// The oldest TLS version accepted.
    pub min_version: TlsVersion,
}

/// The security settings with every default applied.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Security<'a> {
    /// Pod security context.
    pub pod_security_context: Option<&'a PodSecurityContext>,
    /// Container security context (every container).
    pub container_security_context: Option<&'a SecurityContext>,
    /// The user the pods run as when the security contexts name none.
    pub default_user: DefaultUser,
    /// SASL credentials Secret, when SASL is enabled (`""` when unnamed: invalid).
    pub sasl_secret: Option<&'a str>,
    /// TLS, when enabled.
    pub tls: Option<Tls<'a>>,
    /// NetworkPolicy peers when enabled (`Some(&[])` = every source).
    pub network_policy: Option<&'a [NetworkPolicyPeer]>,
    /// How Secret changes reach running pods (`secretRotation` and what the image can reload);
    /// `None` without SASL and TLS.
    pub rotation: Option<Rotation>,
}

fn secret_name(secret: Option<&SecretRef>) -> &str {
    secret.and_then(|r| r.name.as_deref()).unwrap_or("")
}

impl<'a> Security<'a> {
    /// Resolves the defaults of `spec.security` for pods running `image`.
    #[must_use]
    pub fn of(security: Option<&'a SecuritySpec>, image: &str) -> Self {
        let Some(s) = security else {
            return Self::default();
        };
        let sasl = s.sasl.as_ref().filter(|x| x.enabled == Some(true));
        let tls = s.tls.as_ref().filter(|t| t.enabled == Some(true));
        let network_policy = s
            .network_policy
            .as_ref()
            .filter(|n| n.enabled == Some(true));
        let asked = s.secret_rotation.unwrap_or_default();
        Self {
            pod_security_context: s.pod_security_context.as_ref(),
            container_security_context: s.container_security_context.as_ref(),
            default_user: s.default_user.unwrap_or_default(),
            sasl_secret: sasl.map(|x| secret_name(x.credentials_secret_ref.as_ref())),
            tls: tls.map(|t| Tls {
                secret_name: secret_name(t.certificate_secret_ref.as_ref()),
                client_cert: t.enable_client_cert == Some(true),
                allow_plaintext: t.allow_plaintext == Some(true),
                min_version: t.min_version.unwrap_or_default(),
            }),
            network_policy: network_policy.map(|n| n.allowed_sources.as_deref().unwrap_or(&[])),
            rotation: Rotation::of(asked, sasl.is_some(), tls.is_some(), image),
        }
    }

    /// Names of the Secrets of the enabled SASL and TLS blocks, de-duplicated and sorted.
    #[must_use]
    pub fn secrets(&self) -> Vec<&'a str> {
        let mut names: Vec<&str> = [self.sasl_secret, self.tls.map(|t| t.secret_name)]
            .into_iter()
            .flatten()
            .filter(|n| !n.is_empty())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

/// The schema rules of `spec.security`.
pub(super) fn validate(out: &mut Out, s: &SecuritySpec) {
    let sasl = s
        .sasl
        .as_ref()
        .and_then(|x| x.credentials_secret_ref.as_ref());
    let tls = s
        .tls
        .as_ref()
        .and_then(|x| x.certificate_secret_ref.as_ref());
    for (block, secret) in [
        ("sasl.credentialsSecretRef", sasl),
        ("tls.certificateSecretRef", tls),
    ] {
        // An empty name is the CRD's default: the cross-field rules require one when enabled.
        let name = secret
            .and_then(|r| r.name.as_deref())
            .filter(|n| !n.is_empty());
        let field = format!("spec.security.{block}.name");
        pod::check_subdomain(out, &field, name);
    }
    let sources = s
        .network_policy
        .as_ref()
        .and_then(|n| n.allowed_sources.as_ref());
    let field = "spec.security.networkPolicy.allowedSources";
    check::bounded(out, field, sources);
}

/// The cross-field rules of `spec.security`: the CRD's CEL rules on SASL and TLS, and the
/// `extraArgs` memcached refuses beside SASL ([`validate_sasl_args`]).
pub(super) fn validate_rules(out: &mut Out, s: &Security<'_>, line: &CommandLine<'_>) {
    if s.sasl_secret.is_some() {
        validate_sasl_args(out, line);
    }
    if s.sasl_secret == Some("") {
        let field = "spec.security.sasl.credentialsSecretRef.name";
        out.push(Violation::required(field, SASL_SECRET_MESSAGE));
    }
    if s.tls.is_some_and(|t| t.secret_name.is_empty()) {
        let field = "spec.security.tls.certificateSecretRef.name";
        out.push(Violation::required(field, TLS_SECRET_MESSAGE));
    }
}

/// `extraArgs` beside `spec.security.sasl` (memcached `-Y`, ASCII authentication): memcached
/// then serves only the ASCII protocol and exits on `-B binary` or `-B auto` and on a UDP port;
/// `-S` is the binary protocol's SASL, which no client could use.
fn validate_sasl_args(out: &mut Out, line: &CommandLine<'_>) {
    let mut refuse = |at: usize, detail: String| {
        out.push(Violation::invalid(
            format!("spec.memcached.extraArgs[{at}]"),
            quoted(line.arg(at)),
            detail,
        ));
    };
    for o in line.all('B') {
        let protocol = o.value.unwrap_or_default();
        if protocol != "ascii" {
            refuse(
                o.value_at,
                format!(
                    "-B {protocol} with spec.security.sasl.enabled: SASL here is memcached's \
                     ASCII authentication (-Y), which serves only the ASCII protocol (memcached \
                     exits: \"You cannot allow the BINARY protocol while using ascii \
                     authentication tokens\")"
                ),
            );
        }
    }
    for o in line.all('S') {
        refuse(
            o.at,
            "-S with spec.security.sasl.enabled: -S is the binary protocol's SASL, while \
             spec.security.sasl is memcached's ASCII authentication (-Y), with which memcached \
             serves only the ASCII protocol: no client could log in with binary SASL"
                .to_owned(),
        );
    }
    for o in line.all('U') {
        let port = o.value.unwrap_or_default();
        if atoi(port) != Some(0) {
            refuse(
                o.at,
                format!(
                    "UDP port {port} with spec.security.sasl.enabled: memcached exits (\"Cannot \
                     use UDP with ascii authentication enabled\")"
                ),
            );
        }
    }
}
