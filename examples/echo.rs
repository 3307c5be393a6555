//! Bench-only echo server: the hook's HTTP stack with nothing behind it.
//!
//! Same runtime (tokio multi-thread), same connection loop (`memcached_hook::server::serve`,
//! plain HTTP), same layers as `memcached_hook::server::router` (catch-panic, the metrics
//! middleware, timeout, body limit) and the same `Bytes` extractor; `POST /sync` answers 200 with the request body as `application/json`. It is the
//! ceiling the hook's throughput is measured against (`bench/load.sh`).
//!
//! `cargo run --release --example echo -- [ADDR]` (default `127.0.0.1:8081`).

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::sync::Arc;

use memcached_hook::server::metrics;
use memcached_hook::server::{self, Config};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;

async fn echo(body: Result<Bytes, BytesRejection>) -> Response {
    match body {
        Ok(body) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response(),
        Err(rejection) => rejection.into_response(),
    }
}

async fn healthz() -> &'static str {
    "ok\n"
}

fn router(config: &Config) -> Router {
    let registry = Arc::clone(&config.metrics);
    Router::new()
        .route("/sync", post(echo))
        .route("/healthz", get(healthz))
        .route("/readyz", get(healthz))
        .layer((
            CatchPanicLayer::new(),
            axum::middleware::from_fn_with_state(registry, metrics::track),
            TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, config.request_timeout),
            DefaultBodyLimit::max(config.body_limit),
        ))
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8081".to_owned());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        eprintln!("echo serving on {addr}");
        let config = Config::default();
        server::serve_router(
            listener,
            router(&config),
            None,
            memcached_hook::process::shutdown_signal(),
            &config,
        )
        .await
    })
}
