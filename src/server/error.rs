//! Error answers: a status code and `{"error": ..., "field": ...}`.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::SyncError;

/// An error answer. Never 200: Metacontroller then leaves every child and the status alone.
#[derive(Debug, Serialize)]
pub struct ApiError {
    /// HTTP status.
    #[serde(skip)]
    pub status: StatusCode,
    /// What is wrong.
    pub error: String,
    /// JSON path of the field at fault, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    /// An error with a status, a message and an optional field.
    #[must_use]
    pub fn new(status: StatusCode, error: impl Into<String>, field: Option<String>) -> Self {
        Self {
            status,
            error: error.into(),
            field,
        }
    }

    /// Classifies a decoding error: bad JSON syntax or encoding is 400, JSON of the wrong
    /// shape is 422. The path names the field.
    #[must_use]
    pub fn decode(error: &serde_path_to_error::Error<serde_json::Error>) -> Self {
        let path = error.path().to_string();
        let field = (path != ".").then_some(path);
        let inner = error.inner();
        let status = match inner.classify() {
            serde_json::error::Category::Data => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::BAD_REQUEST,
        };
        let kind = if status == StatusCode::BAD_REQUEST {
            "malformed JSON"
        } else {
            "unexpected request shape"
        };
        Self::new(status, format!("{kind}: {inner}"), field)
    }
}

impl From<SyncError> for ApiError {
    fn from(error: SyncError) -> Self {
        let field = Some(error.field().to_owned());
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, error.to_string(), field)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body =
            serde_json::to_vec(&self).unwrap_or_else(|_| br#"{"error":"internal error"}"#.to_vec());
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
}
