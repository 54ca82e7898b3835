//! Bearer-token authentication (docs/spec.md §7, Security).
//!
//! When a token is configured it is required on every path but `/healthz`,
//! loopback included, so a local process cannot bypass it. The comparison
//! takes the same time wherever the first difference is, so the token cannot
//! be guessed byte by byte from response times.
//!
//! The admin page's routes also take a session cookie, and send a browser
//! without one to the login form (`crate::admin::admit`). Every request
//! that gets through carries its `Principal` for the admin page.

use axum::extract::Request;
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::admin::{self, Admission, Principal};
use crate::error::ApiError;
use crate::state::AppState;

/// The one path that answers without a token: liveness probes carry none.
pub const OPEN_PATH: &str = "/healthz";

/// Runs `next` unless the request lacks the configured bearer token (or
/// an admin session); called by [`crate::limits::gate`].
pub async fn require_token(state: &AppState, mut req: Request, next: Next) -> Response {
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
    match admin::admit(expected, &mut req) {
        Admission::Admitted => return next.run(req).await,
        Admission::Login(res) => return res,
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
