//! The one place where failures become HTTP answers.
//!
//! Every error answer is `{"error": {"code", "message"}}` with a stable code
//! (docs/spec.md §7). Store errors keep their own code; the server adds the codes of
//! its own layers (auth, limits, routing). Internal and unavailable errors are
//! logged in full here and answered with a generic message, so file paths,
//! SQL and the like never reach a client.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use spool_core::StoreError;
use utoipa::ToSchema;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// What the store answered.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store did not answer in time.
    #[error("the store did not answer within {0:?}")]
    StoreTimeout(std::time::Duration),
    /// No bearer token (or session) where one is required, or a wrong one:
    /// 401.
    #[error("missing or invalid bearer token")]
    Unauthorized,
    /// No route has this path (cut to 200 characters): 404.
    #[error("no route for {0}")]
    NoRoute(String),
    /// The path exists, but not for this method: 405.
    #[error("method {method} is not allowed on {path}")]
    MethodNotAllowed {
        /// The method the request used.
        method: String,
        /// The request's path, cut to 200 characters.
        path: String,
    },
    /// The body is not JSON by its `Content-Type`: 415.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The request body is larger than the server accepts.
    #[error("request body exceeds the limit of {0} bytes")]
    BodyTooLarge(usize),
    /// Every request slot is taken ([`ServerConfig::concurrency_limit`]):
    /// 429, answered at once rather than queued.
    ///
    /// [`ServerConfig::concurrency_limit`]: crate::ServerConfig::concurrency_limit
    #[error("too many requests in progress; retry later")]
    Overloaded,
    /// The request outlasted [`ServerConfig::request_timeout`](crate::ServerConfig::request_timeout),
    /// body upload included: 408.
    #[error("the request took longer than {0:?}")]
    RequestTimeout(std::time::Duration),
    /// More header fields, or more header bytes, than the limits allow: 431.
    #[error("the request head is too large ({count} fields, {bytes} bytes)")]
    HeadersTooLarge {
        /// Header fields in the request.
        count: usize,
        /// Bytes of the path, query and header fields.
        bytes: usize,
    },
    /// A request a browser was made to send (cross-site, or to a host name
    /// without a token): 403.
    #[error("{0}")]
    Forbidden(String),
}

/// The error object of every error answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    pub error: ErrorDetail,
}

/// A stable machine-readable code and a human-readable message.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorDetail {
    /// One of `bad_request`, `unauthorized`, `not_found`, `method_not_allowed`,
    /// `request_timeout`, `lease_lost`, `lease_held`, `payload_too_large`,
    /// `unsupported_media_type`, `overloaded`, `headers_too_large`,
    /// `internal`, `unavailable`.
    #[schema(example = "not_found")]
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    /// A 400 `bad_request` whose message tells the client what to fix.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::Store(StoreError::BadRequest(message.into()))
    }

    /// The HTTP status and the stable code.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::Store(e) => store_status(e),
            ApiError::StoreTimeout(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::NoRoute(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::MethodNotAllowed { .. } => {
                (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
            }
            ApiError::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            ApiError::BodyTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::Overloaded => (StatusCode::TOO_MANY_REQUESTS, "overloaded"),
            ApiError::RequestTimeout(_) => (StatusCode::REQUEST_TIMEOUT, "request_timeout"),
            ApiError::HeadersTooLarge { .. } => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
            ),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
        }
    }

    /// The message a client may see: everything but the internals of
    /// internal and unavailable errors.
    pub(crate) fn public_message(&self) -> String {
        match self {
            ApiError::Store(StoreError::Unavailable(_)) => {
                "the store is unavailable; retry later".to_string()
            }
            ApiError::Store(e) if store_status(e).1 == "internal" => {
                "internal error; see the server log".to_string()
            }
            other => other.to_string(),
        }
    }
}

impl From<crate::rfc3339::TimeError> for ApiError {
    /// Inputs are bounded, so a stored time RFC 3339 cannot write is a bug.
    fn from(e: crate::rfc3339::TimeError) -> Self {
        ApiError::Store(StoreError::Internal(e.to_string()))
    }
}

/// Status and code of a store error. `StoreError` is non-exhaustive: a
/// variant added later is an internal error until it is mapped here.
fn store_status(e: &StoreError) -> (StatusCode, &'static str) {
    let status = match e {
        StoreError::NotFound | StoreError::QueueNotFound(_) => StatusCode::NOT_FOUND,
        StoreError::LeaseLost | StoreError::LeaseHeld => StatusCode::CONFLICT,
        StoreError::BadRequest(_) => StatusCode::BAD_REQUEST,
        StoreError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        StoreError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        StoreError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        _ => return (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    };
    (status, e.code())
}

/// The error body of an answer.
fn error_response(status: StatusCode, code: &'static str, message: String) -> Response {
    let body = ErrorBody {
        error: ErrorDetail { code, message },
    };
    (status, Json(body)).into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        if status.is_server_error() {
            // The full error goes to the log only; the client gets a generic
            // message (see `public_message`).
            tracing::error!(code, error = %self, "request failed");
        }
        error_response(status, code, self.public_message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internals_are_hidden() {
        let e = ApiError::Store(StoreError::Internal("/var/lib/spool/wal.3: EIO".into()));
        assert!(!e.public_message().contains("wal"));
        assert_eq!(e.status_and_code().1, "internal");
        let e = ApiError::Store(StoreError::Unavailable("fsync failed on /x".into()));
        assert!(!e.public_message().contains("fsync"));
        assert_eq!(e.status_and_code().0, StatusCode::SERVICE_UNAVAILABLE);
    }

    #[test]
    fn store_codes_map_to_statuses() {
        let cases = [
            (StoreError::NotFound, 404),
            (StoreError::LeaseLost, 409),
            (StoreError::LeaseHeld, 409),
            (StoreError::bad_request("x"), 400),
            (StoreError::PayloadTooLarge { size: 2, max: 1 }, 413),
        ];
        for (e, status) in cases {
            assert_eq!(ApiError::Store(e).status_and_code().0.as_u16(), status);
        }
    }
}
