//! Extractors that turn a request into typed input or a JSON error.
//!
//! axum's own extractors answer rejections in plain text; these wrap them so
//! that a bad path, query or body gets the API's error shape and code:
//! 415 for a body that is not JSON, 413 for a body over the limit, 400 for
//! everything malformed.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::ApiError;

/// A request body that claims to be JSON, read whole (up to the body limit).
#[derive(Debug)]
pub(crate) struct JsonBody(pub Bytes);

impl JsonBody {
    /// Parses the body, borrowing strings and raw payloads from it.
    pub(crate) fn parse<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ApiError> {
        serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
    }
}

/// A JSON body parsed into an owned value.
#[derive(Debug)]
pub(crate) struct ApiJson<T>(pub T);

/// Whether a Content-Type names JSON: `application/json` or
/// `application/*+json`, any parameters.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/")
            && essence.ends_with("+json")
            && essence.len() > "application/+json".len())
}

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(ApiError::UnsupportedMediaType(
                "the body must be JSON, with Content-Type: application/json".into(),
            ));
        }
        let limit = req
            .extensions()
            .get::<crate::limits::BodyLimit>()
            .map(|l| l.0);
        match Bytes::from_request(req, state).await {
            Ok(bytes) => Ok(JsonBody(bytes)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::BodyTooLarge(limit.unwrap_or_default()))
            }
            Err(rejection) => Err(ApiError::bad_request(format!(
                "could not read the body: {}",
                rejection.body_text()
            ))),
        }
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let body = JsonBody::from_request(req, state).await?;
        serde_json::from_slice(&body.0)
            .map(ApiJson)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
    }
}

/// Path parameters, validated by their types' `Deserialize` (queue names,
/// keys and ids check themselves).
#[derive(Debug)]
pub(crate) struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|r| ApiError::bad_request(r.body_text()))
    }
}

/// Query parameters.
#[derive(Debug)]
pub(crate) struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| ApiQuery(v))
            .map_err(|r| ApiError::bad_request(r.body_text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(ct: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(ct) {
            h.insert(CONTENT_TYPE, v);
        }
        h
    }

    #[test]
    fn json_content_types() {
        assert!(is_json(&with("application/json")));
        assert!(is_json(&with("Application/JSON; charset=utf-8")));
        assert!(is_json(&with("application/vnd.spool+json")));
        assert!(!is_json(&with("text/plain")));
        assert!(!is_json(&with("application/+json")));
        assert!(!is_json(&with("application/jsonx")));
        assert!(!is_json(&HeaderMap::new()));
    }
}
