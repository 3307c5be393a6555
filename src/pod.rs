//! The programs of the hook's image that run in a memcached pod, beside memcached: the reload
//! agent, the stats exporter and the auth-file step (`agent`), the warm-restart guard and stop
//! (`warm`), and the memcached admin client and process signals they share (`memcached`).

pub mod agent;
pub mod memcached;
pub mod warm;
