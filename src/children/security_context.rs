//! The security contexts of the pods and of every container the hook renders: defaults that
//! pass the Pod Security Standards' `restricted` profile, under what `spec.security` sets.
//!
//! The rule (docs/behaviour.md, "Pod security"): each top-level field the user sets in
//! `podSecurityContext` or `containerSecurityContext` replaces the hook's default of that field,
//! whole (a `capabilities` or `seccompProfile` the user writes is taken as written); every field
//! the user leaves unset keeps the default.

use k8s_openapi::api::core::v1::{
    Capabilities, PodSecurityContext, SeccompProfile, SecurityContext,
};

use crate::api::effective::Effective;
use crate::api::security::DefaultUser;

/// The user (and group) of the official memcached image (`USER memcache`, uid 11211): the pods
/// run as it unless a security context names another or `defaultUser` is `Platform`.
pub const MEMCACHED_UID: i64 = 11211;

/// `user` if it is set, else `default`.
fn or<T>(user: Option<&T>, default: Option<T>) -> Option<T>
where
    T: Clone,
{
    user.cloned().or(default)
}

/// The pod security context of the pods of `e`: non-root, the default user's uid and gid,
/// seccomp `RuntimeDefault`, and with `writable_volume` (a volume memcached's user writes that
/// the kubelet does not make writable for it, warm restart's claim) `fsGroup`; each field the
/// spec's `podSecurityContext` sets replaces its default.
#[must_use]
pub fn pod(e: &Effective<'_>, writable_volume: bool) -> PodSecurityContext {
    let user = e.security.pod_security_context;
    let id = match e.security.default_user {
        DefaultUser::Memcached => Some(MEMCACHED_UID),
        DefaultUser::Platform => None,
    };
    let defaults = PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: id,
        run_as_group: id,
        fs_group: id.filter(|_| writable_volume),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_owned(),
            localhost_profile: None,
        }),
        ..PodSecurityContext::default()
    };
    let Some(user) = user else {
        return defaults;
    };
    PodSecurityContext {
        run_as_non_root: or(user.run_as_non_root.as_ref(), defaults.run_as_non_root),
        run_as_user: or(user.run_as_user.as_ref(), defaults.run_as_user),
        run_as_group: or(user.run_as_group.as_ref(), defaults.run_as_group),
        fs_group: or(user.fs_group.as_ref(), defaults.fs_group),
        seccomp_profile: or(user.seccomp_profile.as_ref(), defaults.seccomp_profile),
        ..user.clone()
    }
}

/// The security context of every container of the pods of `e`: no privilege escalation, every
/// capability dropped, a read-only root filesystem (each container writes only to its mounted
/// volumes); each field the spec's `containerSecurityContext` sets replaces its default.
#[must_use]
pub fn container(e: &Effective<'_>) -> SecurityContext {
    let defaults = SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            add: None,
            drop: Some(vec!["ALL".to_owned()]),
        }),
        read_only_root_filesystem: Some(true),
        ..SecurityContext::default()
    };
    let Some(user) = e.security.container_security_context else {
        return defaults;
    };
    SecurityContext {
        allow_privilege_escalation: or(
            user.allow_privilege_escalation.as_ref(),
            defaults.allow_privilege_escalation,
        ),
        capabilities: or(user.capabilities.as_ref(), defaults.capabilities),
        read_only_root_filesystem: or(
            user.read_only_root_filesystem.as_ref(),
            defaults.read_only_root_filesystem,
        ),
        ..user.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MemcachedSpec;
    use crate::api::effective::Effective;

    fn effective(spec: &serde_json::Value) -> MemcachedSpec {
        serde_json::from_value(spec.clone()).unwrap()
    }

    #[test]
    fn without_a_spec_the_pod_runs_as_memcacheds_user_with_the_runtimes_seccomp_profile() {
        let spec = effective(&serde_json::json!({}));
        let e = Effective::of(&spec);
        let pod = pod(&e, false);
        assert_eq!(pod.run_as_non_root, Some(true));
        assert_eq!(pod.run_as_user, Some(MEMCACHED_UID));
        assert_eq!(pod.run_as_group, Some(MEMCACHED_UID));
        assert_eq!(pod.fs_group, None);
        assert_eq!(pod.seccomp_profile.unwrap().type_, "RuntimeDefault");
        let with_volume = super::pod(&e, true);
        assert_eq!(with_volume.fs_group, Some(MEMCACHED_UID));
    }

    #[test]
    fn each_field_the_user_sets_replaces_its_default_and_the_others_stay() {
        let spec = effective(&serde_json::json!({"security": {
            "podSecurityContext": {"runAsUser": 1000, "supplementalGroups": [5]},
            "containerSecurityContext": {"readOnlyRootFilesystem": false,
                                         "capabilities": {"add": ["NET_BIND_SERVICE"]}},
        }}));
        let e = Effective::of(&spec);
        let pod = pod(&e, true);
        assert_eq!(pod.run_as_user, Some(1000));
        assert_eq!(pod.run_as_group, Some(MEMCACHED_UID));
        assert_eq!(pod.fs_group, Some(MEMCACHED_UID));
        assert_eq!(pod.supplemental_groups, Some(vec![5]));
        assert_eq!(pod.run_as_non_root, Some(true));
        let c = container(&e);
        assert_eq!(c.read_only_root_filesystem, Some(false));
        assert_eq!(c.allow_privilege_escalation, Some(false));
        // The user's capabilities are taken whole: nothing of the default's `drop` is kept.
        let caps = c.capabilities.unwrap();
        assert_eq!(caps.add, Some(vec!["NET_BIND_SERVICE".to_owned()]));
        assert_eq!(caps.drop, None);
    }

    #[test]
    fn platform_leaves_user_group_and_fs_group_to_the_platform() {
        let spec = effective(&serde_json::json!({"security": {"defaultUser": "Platform"}}));
        let e = Effective::of(&spec);
        let pod = pod(&e, true);
        assert_eq!(
            (pod.run_as_user, pod.run_as_group, pod.fs_group),
            (None, None, None)
        );
        assert_eq!(pod.run_as_non_root, Some(true));
        assert_eq!(pod.seccomp_profile.unwrap().type_, "RuntimeDefault");
    }
}
