//! Resource limits applied per request: header count and size (431
//! `headers_too_large`), concurrency (429 `overloaded`), the end-to-end
//! request timeout (408 `request_timeout`), and the body limit's value for
//! error messages.
//!
//! Hyper reads the request head before any of this runs; [`crate::serve`]
//! gives it limits well above the configured ones, as a backstop (hyper's own
//! 431 has no JSON body), so an ordinary oversized head gets the API's error
//! shape from [`gate`].

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::header::CONTENT_LENGTH;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::auth::{self, OPEN_PATH};
use crate::error::ApiError;
use crate::origin;
use crate::state::AppState;

/// The body limit in force, so a 413 can say what it is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimit(pub usize);

/// Refuses a body whose declared length is over the limit before reading
/// any of it. Bodies without a length (chunked) are cut off while being
/// read, by axum's `DefaultBodyLimit`.
fn check_declared_body(limit: BodyLimit, req: &Request) -> Result<(), ApiError> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit.0 as u64) {
        return Err(ApiError::BodyTooLarge(limit.0));
    }
    Ok(())
}

/// The configured header limits: most fields, most bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeaderLimits {
    pub count: usize,
    pub bytes: usize,
}

/// Refuses a request head with too many or too large fields.
fn check_headers(limit: HeaderLimits, req: &Request) -> Result<(), ApiError> {
    let h = req.headers();
    let bytes: usize = h
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum::<usize>()
        + req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if h.len() > limit.count || bytes > limit.bytes {
        return Err(ApiError::HeadersTooLarge {
            count: h.len(),
            bytes,
        });
    }
    Ok(())
}

/// Every per-request limit and the auth check, applied by one middleware:
/// each axum middleware layer costs a boxed future and a service clone per
/// request, which showed in the profile of single-task enqueues.
#[derive(Clone, Debug)]
pub(crate) struct Gate {
    pub headers: HeaderLimits,
    pub body: BodyLimit,
    /// Bounds a request end to end, body upload included, so a slow client
    /// cannot hold a slot forever (408).
    pub timeout: Duration,
    /// Requests in progress at most; more are answered 429 at once instead
    /// of queueing (a queue in front of a full server only adds latency).
    pub slots: Arc<Semaphore>,
    pub state: AppState,
    /// The way in besides the bearer header ([`auth::SessionCheck`]).
    pub sessions: auth::SessionCheck,
}

/// Middleware, in this order: header limits (431), concurrency (429; not
/// for `/healthz`, so probes see a live server), request timeout (408),
/// declared body size (413), cross-site requests (403, [`crate::origin`]),
/// auth (401).
pub(crate) async fn gate(State(gate): State<Arc<Gate>>, req: Request, next: Next) -> Response {
    if let Err(e) = check_headers(gate.headers, &req) {
        return e.into_response();
    }
    let _permit = if req.uri().path() == OPEN_PATH {
        None
    } else {
        match gate.slots.try_acquire() {
            Ok(permit) => Some(permit),
            Err(_) => return ApiError::Overloaded.into_response(),
        }
    };
    let admitted = async {
        if let Err(e) = check_declared_body(gate.body, &req)
            .and_then(|()| origin::check(&req, gate.state.config().token.is_some()))
        {
            return e.into_response();
        }
        auth::require_token(&gate.state, gate.sessions, req, next).await
    };
    match tokio::time::timeout(gate.timeout, admitted).await {
        Ok(res) => res,
        Err(_) => ApiError::RequestTimeout(gate.timeout).into_response(),
    }
}
