//! `/login` and `/logout`: trading the server's token for a session cookie
//! (see [`super::session`]), and giving it back.
//!
//! Without a configured token there is nothing to log in to: both send the
//! browser to the overview. Wrong tokens are throttled ([`super::throttle`]).

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::{RETRY_AFTER, SET_COOKIE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;

use super::error::PageError;
use super::layout::{self, Nav, Page};
use super::links;
use super::session;
use super::throttle::Throttle;
use super::viewer::Checked;
use crate::auth::{self, Principal};
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;

/// `?next=` of the login form: where to go after logging in.
#[derive(Debug, Deserialize)]
pub(super) struct NextQuery {
    next: Option<String>,
}

/// What the login form posts.
#[derive(Debug, Deserialize)]
pub(super) struct LoginForm {
    token: String,
    next: Option<String>,
}

/// `GET /login`.
pub(super) async fn form(
    who: Option<Extension<Principal>>,
    query: Result<ApiQuery<NextQuery>, ApiError>,
) -> Result<Response, PageError> {
    let ApiQuery(q) = query?;
    let next = links::safe_next(q.next.as_deref());
    let signed_in = who.is_some_and(|Extension(w)| w != Principal::Anonymous);
    if signed_in {
        return Ok(layout::redirect(next));
    }
    Ok(render(StatusCode::OK, next, None))
}

/// `POST /login`: a right token sets the session cookie and goes on to
/// `next`; a wrong one shows the form again.
pub(super) async fn submit(
    State(st): State<AppState>,
    Extension(throttle): Extension<Arc<Throttle>>,
    form: Result<Form<LoginForm>, axum::extract::rejection::FormRejection>,
) -> Result<Response, PageError> {
    let Some(expected) = st.config().token.as_deref() else {
        return Ok(layout::redirect("/"));
    };
    let Form(form) = form.map_err(|e| PageError::bad_request(e.body_text()))?;
    let next = links::safe_next(form.next.as_deref());
    if let Err(wait) = throttle.check() {
        let mut res = render(StatusCode::TOO_MANY_REQUESTS, next, Some(TOO_MANY));
        let secs = wait.as_secs().max(1).to_string();
        res.headers_mut().insert(RETRY_AFTER, header(&secs)?);
        return Ok(res);
    }
    if !auth::same(form.token.as_bytes(), expected.as_bytes()) {
        throttle.failed();
        return Ok(render(StatusCode::UNAUTHORIZED, next, Some(WRONG)));
    }
    let key = session::key(Some(expected))?;
    let cookie = session::set_cookie(&session::new_session(&key)?, secure_cookie(&st));
    let mut res = layout::redirect(next);
    res.headers_mut().insert(SET_COOKIE, header(&cookie)?);
    Ok(res)
}

/// `POST /logout`: clears the cookie.
pub(super) async fn logout(State(st): State<AppState>, _: Checked) -> Result<Response, PageError> {
    let mut res = layout::redirect("/login");
    let cookie = session::clear_cookie(secure_cookie(&st));
    res.headers_mut().insert(SET_COOKIE, header(&cookie)?);
    Ok(res)
}

/// Whether the cookie may travel over HTTPS only: when this server speaks
/// TLS, or a proxy in front of it does (`secure_cookies`).
fn secure_cookie(st: &AppState) -> bool {
    st.config().tls.is_some() || st.config().secure_cookies
}

const WRONG: &str = "That token is not right.";
const TOO_MANY: &str = "Too many wrong tokens were tried. Wait a minute, then try again.";

fn header(v: &str) -> Result<HeaderValue, PageError> {
    // Built from base64url, digits and fixed text: always a valid header.
    HeaderValue::from_str(v).map_err(|e| {
        PageError::from(spool_core::StoreError::Internal(format!(
            "cookie header: {e}"
        )))
    })
}

fn render(status: StatusCode, next: &str, failed: Option<&str>) -> Response {
    let body = html! {
        div.login {
            h1 { "Log in to Spool" }
            @if let Some(why) = failed {
                p.error-message role="alert" #login-error { (why) }
            }
            form method="post" action="/login" {
                input type="hidden" name="next" value=(next);
                label for="token" { "Server token" }
                input #token type="password" name="token" required autocomplete="current-password"
                    autofocus aria-describedby=[failed.map(|_| "login-error")];
                button.btn.btn-primary type="submit" { "Log in" }
            }
            p.muted {
                "The token is the one the server was started with ("
                code { "--token" } " or " code { "SPOOL_TOKEN" } ")."
            }
            @if next != "/" {
                p.muted {
                    "Logged in already? Links from other sites arrive without the login cookie: "
                    a href=(next) { "continue to the page" } "."
                }
            }
        }
    };
    let page = Page {
        title: "Log in",
        nav: Nav::Other,
        refresh: false,
    };
    layout::respond(status, layout::render(&page, None, body))
}
