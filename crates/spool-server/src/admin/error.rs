//! Failures of the admin pages, answered as HTML pages.
//!
//! Status codes and messages come from [`ApiError`] (the one place that
//! maps failures), so a page fails exactly as the API call behind it would,
//! internals hidden; only the admin page's own refusals (an action without
//! its CSRF token, a page without a login) are added here.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use spool_core::StoreError;

use super::layout::{self, Nav, Page};
use super::links;
use crate::error::ApiError;

/// Why a page or an action failed.
#[derive(Debug)]
pub(super) enum PageError {
    /// What the API would answer.
    Api(ApiError),
    /// An action without a valid CSRF token.
    Forged,
    /// No login: this page needs one.
    SignIn,
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError::Api(e)
    }
}

impl From<StoreError> for PageError {
    fn from(e: StoreError) -> Self {
        PageError::Api(ApiError::Store(e))
    }
}

impl PageError {
    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        PageError::Api(ApiError::bad_request(message))
    }

    fn parts(&self) -> (StatusCode, &'static str, String) {
        match self {
            PageError::Api(e) => {
                let (status, _) = e.status_and_code();
                let title = match status.as_u16() {
                    400 => "That request is not valid",
                    404 => "Not found",
                    409 => "That cannot be done now",
                    503 => "The store is unavailable",
                    s if s >= 500 => "Something went wrong",
                    _ => "That did not work",
                };
                (status, title, e.public_message())
            }
            PageError::Forged => (
                StatusCode::FORBIDDEN,
                "This form has expired",
                "The form did not carry this page's security token (it may be from an older \
                 login). Go back, reload the page and try again."
                    .to_string(),
            ),
            PageError::SignIn => (
                StatusCode::UNAUTHORIZED,
                "Please log in",
                "This page needs the server's token.".to_string(),
            ),
        }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, title, message) = self.parts();
        if let PageError::Api(e) = &self {
            if status.is_server_error() {
                // The full error goes to the log only, as for the API.
                tracing::error!(error = %e, "admin page failed");
            }
        }
        let body = html! {
            h1 { (title) }
            p.error-message { (message) }
            p {
                @if matches!(self, PageError::SignIn) {
                    a.btn href=(links::login("/")) { "Log in" }
                } @else {
                    a href=(links::overview()) { "Back to the queues" }
                }
            }
        };
        let page = Page {
            title,
            nav: Nav::Other,
            refresh: false,
        };
        layout::respond(status, layout::render(&page, None, body))
    }
}
