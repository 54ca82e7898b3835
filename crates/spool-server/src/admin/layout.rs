//! The shell every admin page shares (head, navigation, footer) and the
//! headers every admin answer carries.
//!
//! The headers keep the pages to themselves: a strict Content Security
//! Policy (only this server's own CSS and script, no inline script, forms
//! post only here), no framing (so no page can trick a click on "Delete"),
//! and no caching (pages show payloads).

use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, LOCATION, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};

use super::assets;
use super::links;

/// How often the pages refresh themselves, in seconds (with JavaScript).
pub(super) const REFRESH_SECS: u32 = 5;
/// How often they do without JavaScript: slower, since a full reload
/// closes what the reader opened.
const NOSCRIPT_REFRESH_SECS: u32 = 15;

const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Which navigation entry is the current page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Nav {
    Queues,
    Schedules,
    Other,
}

/// What the shell needs to know about a page.
#[derive(Debug)]
pub(super) struct Page<'a> {
    pub title: &'a str,
    pub nav: Nav,
    /// Whether the page refreshes itself (pages that show live state).
    pub refresh: bool,
}

/// A whole HTML document around `body`, with a "Log out" button posting
/// `logout` (the CSRF token of a viewer signed in with a session).
pub(super) fn render(page: &Page<'_>, logout: Option<&str>, body: Markup) -> Markup {
    let current = |n: Nav| (page.nav == n).then_some("page");
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (page.title) " · Spool" }
                link rel="stylesheet" href=(assets::href(assets::CSS));
                @if page.refresh {
                    noscript { meta http-equiv="refresh" content=(NOSCRIPT_REFRESH_SECS); }
                    script src=(assets::href(assets::JS)) defer {}
                }
            }
            body data-refresh=[page.refresh.then_some(REFRESH_SECS)] {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    div.bar {
                        a.brand href=(links::overview()) { "Spool" }
                        nav aria-label="Main" {
                            ul {
                                li { a href=(links::overview()) aria-current=[current(Nav::Queues)] { "Queues" } }
                                li { a href=(links::schedules()) aria-current=[current(Nav::Schedules)] { "Schedules" } }
                            }
                        }
                        @if let Some(csrf) = logout {
                            form.logout method="post" action="/logout" {
                                input type="hidden" name="csrf" value=(csrf);
                                button.btn.btn-quiet type="submit" { "Log out" }
                            }
                        }
                    }
                }
                main #main tabindex="-1" { (body) }
                footer.foot {
                    div.bar {
                        @if page.refresh {
                            p #refresh-status { "This page refreshes itself every few seconds." }
                        }
                        p { "Spool " (env!("CARGO_PKG_VERSION")) }
                    }
                }
            }
        }
    }
}

/// An HTML answer with the admin headers.
pub(super) fn respond(status: StatusCode, markup: Markup) -> Response {
    let mut res = (status, Html(markup.into_string())).into_response();
    secure(&mut res, "no-store");
    res
}

/// Adds the admin headers to an answer.
pub(super) fn secure(res: &mut Response, cache: &'static str) {
    let h = res.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static(cache));
}

/// 303 See Other to a path of this server (after a form, so reloading the
/// page does not post it again).
pub(super) fn redirect(to: &str) -> Response {
    let mut res = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        res.headers_mut().insert(LOCATION, v);
    } else {
        res.headers_mut()
            .insert(LOCATION, HeaderValue::from_static("/"));
    }
    secure(&mut res, "no-store");
    res
}

/// A notice at the top of a page, after an action.
pub(super) fn flash(message: Option<String>) -> Markup {
    html! {
        @if let Some(m) = message {
            p.flash role="status" { (m) }
        }
    }
}

/// A time as text relative to the store's `now`, with the exact UTC time in
/// its tooltip and its machine-readable form.
pub(super) fn time_ago(t: spool_core::Timestamp, now: spool_core::Timestamp) -> Markup {
    html! {
        time datetime=(super::text::machine_time(t)) title=(super::text::time(t)) {
            (super::text::relative(t, now))
        }
    }
}

/// How long ago `t` was (`13 s`), with the exact UTC time in its tooltip.
pub(super) fn time_since(t: spool_core::Timestamp, now: spool_core::Timestamp) -> Markup {
    html! {
        time datetime=(super::text::machine_time(t)) title=(super::text::time(t)) {
            (super::text::duration(now.since(t)))
        }
    }
}

/// A task state as a labelled badge (the colour only repeats the word).
pub(super) fn state_badge(state: spool_core::TaskState) -> Markup {
    html! { span class={ "badge state-" (state.as_str()) } { (state.as_str()) } }
}
