//! Who a request for an admin page is, when a token is configured.
//!
//! [`admit`] is the [`crate::auth::SessionCheck`] the router plugs into
//! the auth middleware, which asks it about requests that carry no valid
//! bearer header. A valid session cookie admits requests to admin routes;
//! the login form and the assets are open to everyone (they show nothing
//! of the store); a browser asking for any other page is sent to the login
//! form; anything else gets the API's 401.
//!
//! Routes are recognised by their template ([`super::ROUTES`]), after
//! routing: a route missing from that list needs the bearer token like the
//! API, so a forgotten entry fails closed.

use axum::extract::{MatchedPath, Request};
use axum::http::header::ACCEPT;
use axum::http::{HeaderMap, Method};

use super::session;
use super::{layout, links, PUBLIC_ROUTES, ROUTES};
use crate::auth::{Admission, Principal};

fn route(req: &Request) -> Option<&str> {
    req.extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
}

/// Decides about a request under a configured `token`.
pub(crate) fn admit(token: &str, req: &Request) -> Admission {
    let Some(route) = route(req).filter(|r| ROUTES.contains(r)) else {
        return Admission::Refused;
    };
    let public = PUBLIC_ROUTES.contains(&route);
    let Ok(key) = session::key(Some(token)) else {
        return Admission::Refused;
    };
    if let Some(id) = session::session_of(&key, req.headers()) {
        return Admission::Admitted(Principal::Session(id));
    }
    if public {
        return Admission::Admitted(Principal::Anonymous);
    }
    if req.method() == Method::GET && wants_html(req.headers()) {
        let here = req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        return Admission::Answer(layout::redirect(&links::login(links::safe_next(Some(
            &here,
        )))));
    }
    Admission::Refused
}

/// Whether the client is a browser navigating (it asks for HTML). API
/// clients asking for JSON or anything keep getting the JSON 401.
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"))
}
