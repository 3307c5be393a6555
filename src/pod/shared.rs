//! What the pod programs share besides the memcached client: the checks of the mounted material
//! before it reaches memcached (`check.rs`), and the small runtime and the listener of the two
//! sidecars (the reload agent and the stats exporter).

pub mod check;

use std::net::SocketAddr;

/// The small runtime of a sidecar (one worker: it serves a scrape now and then).
pub(super) fn sidecar_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context as _;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the runtime")
}

/// The sidecar's HTTP listener on `addr`.
pub(super) async fn listen(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    use anyhow::Context as _;
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))
}
