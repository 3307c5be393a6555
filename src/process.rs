//! What every long-running program of the binary shares, whether it serves `/sync` or runs in
//! a memcached pod: how it is told to stop, and the content type of the metrics it serves.

/// The content type of an OpenMetrics text exposition (the hook's and the pod programs').
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received, finishing in-flight requests"),
        () = terminate => tracing::info!("SIGTERM received, finishing in-flight requests"),
    }
}
