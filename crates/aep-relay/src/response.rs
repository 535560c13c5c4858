//! The JSON answers of the relay's HTTP endpoints: one place that writes the status, the
//! `Content-Type` and the body, for the binding's routes (`http`) and the console's API
//! (`console`) alike.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// `body` as `application/json` with `status`.
pub(crate) fn json(status: StatusCode, body: &Value) -> Response {
    json_text(status, body.to_string())
}

/// JSON already written (`text`) as `application/json` with `status`.
pub(crate) fn json_text(status: StatusCode, text: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text,
    )
        .into_response()
}
