//! What a page handler knows of who is looking ([`Viewer`], with its forms'
//! CSRF field and the shell's log-out token), and the check
//! every action runs first ([`Checked`]): a form posted with the viewer's
//! CSRF token.
//!
//! Both fail closed: a request without a [`Principal`] (which the auth
//! middleware always sets) or an anonymous one is refused.

use axum::extract::rejection::FormRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Form;
use maud::{html, Markup};
use serde::Deserialize;

use super::error::PageError;
use super::session;
use super::FORM_LIMIT;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::state::AppState;

/// Who is looking at a page, and the CSRF token for its forms.
#[derive(Clone, Debug)]
pub(super) struct Viewer {
    pub who: Principal,
    pub csrf: Option<String>,
}

impl Viewer {
    /// The CSRF token the shell's "Log out" button posts: only a viewer
    /// signed in with a session has one to end.
    pub(super) fn logout_csrf(&self) -> Option<&str> {
        match (&self.who, &self.csrf) {
            (Principal::Session(_), Some(csrf)) => Some(csrf),
            _ => None,
        }
    }

    /// A CSRF field for an action form.
    pub(super) fn csrf_field(&self) -> Markup {
        html! {
            @if let Some(csrf) = &self.csrf {
                input type="hidden" name="csrf" value=(csrf);
            }
        }
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        let who = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or(PageError::SignIn)?;
        if who == Principal::Anonymous {
            return Err(PageError::SignIn);
        }
        let key = session::key(state.config().token.as_deref())?;
        let csrf = session::csrf_token(&key, &who);
        Ok(Viewer { who, csrf })
    }
}

/// The one field every action form carries.
#[derive(Debug, Deserialize)]
struct CsrfField {
    csrf: Option<String>,
}

/// An action whose form carried the viewer's CSRF token.
#[derive(Debug)]
pub(super) struct Checked;

impl FromRequest<AppState> for Checked {
    type Rejection = PageError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, PageError> {
        let (mut parts, body) = req.into_parts();
        let viewer = Viewer::from_request_parts(&mut parts, state).await?;
        let req = Request::from_parts(parts, body);
        let Form(field) = Form::<CsrfField>::from_request(req, state)
            .await
            .map_err(form_error)?;
        let key = session::key(state.config().token.as_deref())?;
        match field.csrf {
            Some(given) if session::csrf_ok(&key, &viewer.who, &given) => Ok(Checked),
            _ => Err(PageError::Forged),
        }
    }
}

fn form_error(r: FormRejection) -> PageError {
    let e = match r.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::BodyTooLarge(FORM_LIMIT),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType(
            "an action's body must be a form (application/x-www-form-urlencoded)".into(),
        ),
        _ => ApiError::bad_request(r.body_text()),
    };
    PageError::Api(e)
}
