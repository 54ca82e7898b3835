//! Resource limits applied per request: header count and size (431
//! `headers_too_large`), concurrency (429 `overloaded`), the end-to-end
//! request timeout (408 `request_timeout`), and the body limit's value for
//! error messages.
//!
//! Hyper reads the request head before any of this runs; [`crate::serve`]
//! gives it limits well above the configured ones, as a backstop (hyper's own
//! 431 has no JSON body), so an ordinary oversized head gets the API's error
//! shape from [`headers`].

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::header::CONTENT_LENGTH;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::auth::OPEN_PATH;
use crate::error::ApiError;

/// The body limit in force, so a 413 can say what it is.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

/// Middleware: refuses a body whose declared length is over the limit
/// before reading any of it. Bodies without a length (chunked) are cut off
/// while being read, by axum's `DefaultBodyLimit`.
pub async fn declared_body(State(limit): State<BodyLimit>, req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit.0 as u64) {
        return ApiError::BodyTooLarge(limit.0).into_response();
    }
    next.run(req).await
}

/// The configured header limits: most fields, most bytes.
#[derive(Clone, Copy, Debug)]
pub struct HeaderLimits {
    pub count: usize,
    pub bytes: usize,
}

/// Middleware: refuses a request head with too many or too large fields.
pub async fn headers(State(limit): State<HeaderLimits>, req: Request, next: Next) -> Response {
    let h = req.headers();
    let bytes: usize = h
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum::<usize>()
        + req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if h.len() > limit.count || bytes > limit.bytes {
        return ApiError::HeadersTooLarge {
            count: h.len(),
            bytes,
        }
        .into_response();
    }
    next.run(req).await
}

/// Middleware: answers 429 at once when `limit` requests are already in
/// progress, instead of queueing them (a queue in front of a full server
/// only adds latency). `/healthz` is exempt so probes see a live server.
pub async fn concurrency(
    State(slots): State<Arc<Semaphore>>,
    req: Request,
    next: Next,
) -> Response {
    if req.uri().path() == OPEN_PATH {
        return next.run(req).await;
    }
    match slots.try_acquire() {
        Ok(_permit) => next.run(req).await,
        Err(_) => ApiError::Overloaded.into_response(),
    }
}

/// Middleware: bounds a request end to end, body upload included, so a slow
/// client cannot hold a slot forever.
pub async fn request_timeout(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(res) => res,
        Err(_) => ApiError::RequestTimeout(limit).into_response(),
    }
}
