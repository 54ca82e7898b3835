//! Who a request for an admin page is, when a token is configured.
//!
//! The auth middleware (`crate::auth`) asks [`admit`] about requests to
//! admin routes that carry no valid bearer header. A valid session cookie
//! admits them; the login form and the assets are open to everyone (they
//! show nothing of the store); a browser asking for any other page is sent
//! to the login form; anything else gets the API's 401.
//!
//! Routes are recognised by their template ([`super::ROUTES`]), after
//! routing: a route missing from that list needs the bearer token like the
//! API, so a forgotten entry fails closed.

use axum::extract::{MatchedPath, Request};
use axum::http::header::ACCEPT;
use axum::http::{HeaderMap, Method};
use axum::response::Response;

use super::session::{self, Principal};
use super::{layout, links, PUBLIC_ROUTES, ROUTES};

/// What to do with a request that has no valid bearer header.
#[derive(Debug)]
pub enum Admission {
    /// Let it through; its [`Principal`] is in its extensions.
    Admitted,
    /// Answer this instead: a browser goes to the login form.
    Login(Response),
    /// Not for the admin page to decide: the usual 401.
    Refused,
}

fn route(req: &Request) -> Option<&str> {
    req.extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
}

/// Decides about a request under a configured `token`.
pub fn admit(token: &str, req: &mut Request) -> Admission {
    let Some(route) = route(req).filter(|r| ROUTES.contains(r)) else {
        return Admission::Refused;
    };
    let public = PUBLIC_ROUTES.contains(&route);
    let Ok(key) = session::key(Some(token)) else {
        return Admission::Refused;
    };
    if let Some(id) = session::session_of(&key, req.headers()) {
        req.extensions_mut().insert(Principal::Session(id));
        return Admission::Admitted;
    }
    if public {
        req.extensions_mut().insert(Principal::Anonymous);
        return Admission::Admitted;
    }
    if req.method() == Method::GET && wants_html(req.headers()) {
        let here = req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        return Admission::Login(layout::redirect(&links::login(links::safe_next(Some(
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
