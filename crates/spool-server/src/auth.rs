//! Bearer-token authentication (docs/spec.md §7, Security).
//!
//! When a token is configured it is required on every path but `/healthz`,
//! loopback included, so a local process cannot bypass it. The comparison
//! takes the same time wherever the first difference is, so the token cannot
//! be guessed byte by byte from response times.
//!
//! Auth decides about the bearer header itself. A request without a valid
//! one may still get in another way: the router plugs in a
//! [`SessionCheck`] (the admin page's session cookie), which may admit it,
//! answer it (a browser goes to the login form) or leave it refused. So
//! this module knows nothing of the admin page. Every request that gets
//! through carries its [`Principal`].

use axum::extract::Request;
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The one path that answers without a token: liveness probes carry none.
pub(crate) const OPEN_PATH: &str = "/healthz";

/// Who a request is. The middleware puts one in the extensions of every
/// request it lets through (but `/healthz`'s, which needs none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Principal {
    /// No token is configured: everyone may read and act.
    Open,
    /// A valid bearer token.
    Bearer,
    /// A valid session cookie; holds the session's id (its signed part).
    Session(String),
    /// Nobody yet, let in by the [`SessionCheck`] to what it shows anyone
    /// (a login form).
    Anonymous,
}

/// What a [`SessionCheck`] decides about a request.
#[derive(Debug)]
pub(crate) enum Admission {
    /// Let it through as this principal.
    Admitted(Principal),
    /// Answer this instead (a redirect to a login form, say).
    Answer(Response),
    /// Not for the check to decide: the usual 401.
    Refused,
}

/// The second way in, given by the router: asked, under the configured
/// token, about every request that has no valid bearer header. A plain
/// function, so it holds no state of its own.
pub(crate) type SessionCheck = fn(token: &str, req: &Request) -> Admission;

/// Runs `next` unless the request lacks the configured bearer token and
/// `sessions` does not admit it; called by [`crate::limits::gate`].
pub(crate) async fn require_token(
    state: &AppState,
    sessions: SessionCheck,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(expected) = state.config().token.as_deref() else {
        req.extensions_mut().insert(Principal::Open);
        return next.run(req).await;
    };
    if req.uri().path() == OPEN_PATH {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer);
    if given.is_some_and(|g| same(g.as_bytes(), expected.as_bytes())) {
        req.extensions_mut().insert(Principal::Bearer);
        return next.run(req).await;
    }
    match sessions(expected, &req) {
        Admission::Admitted(who) => {
            req.extensions_mut().insert(who);
            return next.run(req).await;
        }
        Admission::Answer(res) => return res,
        Admission::Refused => {}
    }
    let mut res = ApiError::Unauthorized.into_response();
    res.headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    res
}

/// The credentials of an `Authorization: Bearer …` header (scheme in any case).
fn bearer(header: &str) -> Option<&str> {
    let (scheme, rest) = header.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim_start_matches(' '))
}

/// Constant-time equality (for equal lengths; the length is not secret).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bearer_headers() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc"), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
    }

    #[test]
    fn compares_whole_tokens() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secret", b"secreT"));
        assert!(!same(b"secret", b"secret2"));
        assert!(!same(b"", b"x"));
    }
}
