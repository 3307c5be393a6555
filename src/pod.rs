//! The programs of the hook's image that run in a memcached pod, beside memcached, one module
//! each: the reload agent (`reload_agent`), the stats exporter (`exporter`), the auth-file step
//! (`auth_file`), the warm-restart guard and stop (`warm`); and what they share: the memcached
//! admin client and process signals (`memcached`), the checks of mounted material and the
//! sidecars' runtime (`shared`).

pub mod auth_file;
pub mod exporter;
pub mod memcached;
pub mod reload_agent;
pub mod shared;
pub mod warm;
