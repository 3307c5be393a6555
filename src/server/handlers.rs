//! Route handlers.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;

use super::ApiError;
use super::budget::{Deadline, Held};
use super::metrics::SyncOutcome;
use crate::hook::Received;

/// Accepts JSON. Also accepts no content type and `application/x-www-form-urlencoded`, which
/// is what `curl -d @request.json` sends, so the documented debugging command works; any
/// other type is a 415.
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let mime = value
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim();
    let json_suffix = mime
        .len()
        .checked_sub(5)
        .and_then(|start| mime.get(start..))
        .is_some_and(|suffix| suffix.eq_ignore_ascii_case("+json"));
    if mime.eq_ignore_ascii_case("application/json")
        || mime.eq_ignore_ascii_case("application/x-www-form-urlencoded")
        || json_suffix
    {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "expected Content-Type application/json, got {:?}",
                value.to_str().unwrap_or("<not text>")
            ),
            None,
        ))
    }
}

fn read_body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| ApiError::new(rejection.status(), rejection.body_text(), None))
}

fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    crate::hook::decode(body).map_err(|e| ApiError::decode(&e))
}

/// BLAKE3 key-derivation context of the ETag. It names the build (a hash of the sources, from
/// build.rs): equal requests to the same build get equal answers, and a new build never
/// answers 304 to a request an old build answered.
const ETAG_CONTEXT: &str = concat!(
    "memcached-hook ",
    env!("MEMCACHED_HOOK_BUILD_ID"),
    " sync request ETag"
);

/// What `POST /sync` answers with: the options children are built with, and the ETag key
/// derived from them once.
pub struct SyncState {
    options: Arc<crate::Options>,
    /// Syncs running at once: one per core (at least two); more would only share the cores.
    workers: Arc<tokio::sync::Semaphore>,
    /// The deadline of a request that carries none.
    request_timeout: Duration,
    /// The build and the options (another reload-agent or default image is another answer) go
    /// into the key, never in front of the body.
    etag_key: [u8; blake3::KEY_LEN],
}

/// The options that change an answer, each preceded by its length so that no two sets of
/// options give the same bytes.
fn etag_material(options: &crate::Options) -> Vec<u8> {
    let images = [
        &options.reload_agent_image,
        &options.default_image,
        &options.default_exporter_image,
    ];
    let mut material = Vec::new();
    for image in images {
        material.extend_from_slice(&(image.len() as u64).to_le_bytes());
        material.extend_from_slice(image.as_bytes());
    }
    material
}

impl SyncState {
    /// The state for answers built with `options`.
    #[must_use]
    pub fn new(options: Arc<crate::Options>) -> Self {
        let etag_key = blake3::derive_key(ETAG_CONTEXT, &etag_material(&options));
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        Self {
            options,
            workers: Arc::new(tokio::sync::Semaphore::new(cores.max(2))),
            request_timeout: super::DEFAULT_REQUEST_TIMEOUT,
            etag_key,
        }
    }

    /// The same state with syncs answered 503 after `request_timeout` when the request carries
    /// no deadline of its own.
    #[must_use]
    pub fn with_request_timeout(mut self, request_timeout: Duration) -> Self {
        self.request_timeout = request_timeout;
        self
    }

    /// A strong ETag of the request body and the build: equal requests to the same build get
    /// equal answers, so an unchanged request can be answered with 304 before decoding.
    ///
    /// BLAKE3 rather than SHA-256: a 304 costs little besides receiving the body and hashing
    /// it, and BLAKE3 hashes it several times faster while staying collision resistant
    /// (BENCHMARKS.md). The build goes into the key (BLAKE3's derive-key mode, derived once in
    /// [`SyncState::new`]), not in front of the body: the body then starts at BLAKE3's first
    /// chunk and is hashed many chunks at a time from its first byte, which halves the time for
    /// a 19 KB body (BENCHMARKS.md).
    #[must_use]
    pub fn etag(&self, body: &[u8]) -> String {
        let digest = blake3::Hasher::new_keyed(&self.etag_key)
            .update(body)
            .finalize();
        let mut out = String::with_capacity(73);
        out.push_str("\"blake3:");
        out.push_str(digest.to_hex().as_str());
        out.push('"');
        out
    }
}

fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|candidate| candidate.trim() == etag)
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, ApiError> {
    crate::hook::encode(value).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("could not encode the answer: {e}"),
            None,
        )
    })
}

/// What one `/sync` call did, for its log line.
#[derive(Default)]
struct Outcome {
    parent: Option<(String, String)>,
    children: usize,
}

fn sync_inner(
    state: &SyncState,
    headers: &HeaderMap,
    body: &Bytes,
    stop: Option<&Arc<AtomicBool>>,
    outcome: &mut Outcome,
) -> Result<Response, ApiError> {
    let etag = state.etag(body);
    let etag_header = HeaderValue::from_str(&etag).map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "could not build the ETag header",
            None,
        )
    })?;
    if if_none_match(headers, &etag) {
        let mut answer = (
            StatusCode::NOT_MODIFIED,
            [(header::ETAG, etag_header)],
            Body::empty(),
        )
            .into_response();
        answer.extensions_mut().insert(SyncOutcome::NotModified);
        return Ok(answer);
    }
    let mut received = Received::decode(&body[..]).map_err(|e| ApiError::decode(&e))?;
    if let Some(stop) = stop {
        received = received.with_stop(Arc::clone(stop));
    }
    let meta = &received.request().parent.metadata;
    outcome.parent = Some((
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone(),
    ));
    let response = crate::sync(&received, Timestamp::now(), &state.options);
    // A sync stopped at its deadline may have given up on a child: its answer, whatever it
    // is, is not sent (nor encoded).
    if received.stopped() {
        return Err(over_deadline());
    }
    let response = response?;
    outcome.children = response.children.len();
    let kept = response
        .children
        .iter()
        .any(|c| matches!(c, crate::hook::Child::Kept(_)));
    let mut answer = json_response(StatusCode::OK, encode(&response)?);
    answer.headers_mut().insert(header::ETAG, etag_header);
    answer.extensions_mut().insert(if kept {
        SyncOutcome::KeptInvalid
    } else {
        SyncOutcome::Synced
    });
    Ok(answer)
}

/// What a sync that did not finish by its deadline is told. A 503 changes nothing in
/// Metacontroller, which retries with back-off.
fn over_deadline() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "the sync did not finish within the request timeout; retry later",
        None,
    )
}

/// Bodies up to this size are synced on the async worker that read them: the work is linear
/// in the body, so at most about 2 ms of CPU even on the keep path, and a realistic request
/// (10-30 KB) takes 30-40 µs, about a third of what handing it to a blocking thread and back
/// costs in wake-ups (BENCHMARKS.md).
const INLINE_MAX_BYTES: usize = 64 * 1024;

/// Runs the sync of `body`: inline when it is small ([`INLINE_MAX_BYTES`]), else on a blocking
/// thread (one of [`SyncState`]'s workers), so that the async workers stay free for other
/// requests and probes, answering 503 at `deadline` if it has not finished. The work itself is
/// bounded (linear in the body); the deadline is the backstop, and it stops the work too: the
/// request's stop flag ([`Received::with_stop`]) is raised, the work that repeats per child
/// ends at its next child, and the worker is free for the next sync. The body's permits
/// ([`Held`]) stay with the sync until it ends.
async fn run_sync(
    state: Arc<SyncState>,
    headers: HeaderMap,
    body: Bytes,
    deadline: Instant,
    held: Option<Held>,
) -> (Result<Response, ApiError>, Outcome) {
    if body.len() <= INLINE_MAX_BYTES {
        let _held = held;
        let mut outcome = Outcome::default();
        let result = sync_inner(&state, &headers, &body, None, &mut outcome);
        return (result, outcome);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let work = async {
        let worker = Arc::clone(&state.workers)
            .acquire_owned()
            .await
            .map_err(|_| over_deadline())?;
        tokio::task::spawn_blocking(move || {
            let _held = (worker, held);
            let mut outcome = Outcome::default();
            let result = sync_inner(&state, &headers, &body, Some(&stop), &mut outcome);
            (result, outcome)
        })
        .await
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error", None))
    };
    match tokio::time::timeout_at(deadline.into(), work).await {
        Ok(Ok(done)) => done,
        Ok(Err(error)) => (Err(error), Outcome::default()),
        Err(_) => {
            stopping.store(true, Ordering::Relaxed);
            (Err(over_deadline()), Outcome::default())
        }
    }
}

/// `POST /sync`.
pub async fn sync(
    axum::extract::State(state): axum::extract::State<Arc<SyncState>>,
    deadline: Option<Extension<Deadline>>,
    held: Option<Extension<Held>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let (result, outcome) = match check_content_type(&headers).and_then(|()| read_body(body)) {
        Ok(body) => {
            // Just before the server's own timeout (408), so that the caller learns why.
            let deadline = deadline.map_or(started + state.request_timeout, |d| d.0.0);
            let deadline = deadline
                .checked_sub(DEADLINE_MARGIN.min(state.request_timeout / 10))
                .unwrap_or(deadline);
            run_sync(state, headers, body, deadline, held.map(|h| h.0)).await
        }
        Err(error) => (Err(error), Outcome::default()),
    };
    let (namespace, name) = outcome.parent.unwrap_or_default();
    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    match result {
        Ok(response) => {
            let code = response.status().as_u16();
            // Debug, not info: at 10-15 µs of CPU a line it was the largest cost of a request
            // outside decoding (BENCHMARKS.md); rejections stay warnings.
            tracing::debug!(
                path = "/sync",
                namespace = namespace.as_str(),
                name = name.as_str(),
                code,
                children = outcome.children,
                latency_us = micros,
                "sync answered"
            );
            response
        }
        Err(error) => {
            let code = error.status.as_u16();
            tracing::warn!(
                path = "/sync",
                namespace = namespace.as_str(),
                name = name.as_str(),
                code,
                error = error.error.as_str(),
                field = error.field.as_deref().unwrap_or(""),
                latency_us = micros,
                "sync rejected"
            );
            let mut answer = error.into_response();
            answer.extensions_mut().insert(SyncOutcome::Rejected);
            answer
        }
    }
}

/// How long before the request timeout a sync still running is answered 503 (at most a tenth
/// of the timeout).
const DEADLINE_MARGIN: Duration = Duration::from_millis(100);

/// `POST /customize`.
pub async fn customize(
    axum::extract::State(options): axum::extract::State<Arc<crate::Options>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let result = (|| {
        check_content_type(&headers)?;
        let body = read_body(body)?;
        let request: crate::hook::CustomizeRequest = decode(&body)?;
        let response = crate::customize(&request, &options)?;
        Ok::<_, ApiError>(json_response(StatusCode::OK, encode(&response)?))
    })();
    result.unwrap_or_else(|error| {
        tracing::warn!(
            path = "/customize",
            code = error.status.as_u16(),
            error = error.error.as_str(),
            "customize rejected"
        );
        error.into_response()
    })
}

/// `GET /healthz` and `GET /readyz`: the process serves requests.
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// Any other path.
pub async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such route: use POST /sync, POST /customize, GET /healthz or GET /readyz",
        None,
    )
}

/// A panic becomes a 500 with a JSON body; Metacontroller then retries and changes nothing.
#[allow(clippy::needless_pass_by_value)]
pub fn panic_response(_panic: Box<dyn Any + Send + 'static>) -> Response {
    tracing::error!("handler panicked");
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error", None).into_response()
}
