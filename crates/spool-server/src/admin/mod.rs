//! The admin page (docs/spec.md §7, "Admin page"): server-rendered HTML over the
//! same [`spool_core::Store`] the API uses, compiled into the binary.
//!
//! A map:
//! - one file per page — `overview` (`/`, the one in the OpenAPI document),
//!   `queue` (`/queues/{queue}`), `task` (`/tasks/{id}`, with `deps` for
//!   the tasks it waits for), `schedules` —
//!   each with its actions: plain HTML forms that POST, make one store call,
//!   and redirect back (so reloading never repeats an action);
//! - `layout` is the shell and the headers every page gets, `error` turns
//!   failures into HTML pages with the API's status codes, `chart` draws
//!   inline SVG, `text` and `payload` say how values read, `links` builds
//!   every URL, `assets` holds the CSS and the refresh script and
//!   `asset_route` serves them;
//! - `session` signs login cookies and CSRF tokens, `gate` tells the auth
//!   middleware who a request is, `viewer` gives handlers the viewer and
//!   checks every action's CSRF token, `login` trades the token for a
//!   cookie.
//!
//! The overview's rates and charts read the server's `monitor`, which the
//! API feeds; the page owns none of it.
//!
//! Reading works without JavaScript; the only script refreshes the page.
//! Nothing here keeps state but the samples, and every action is one that
//! the API also offers.

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::{Extension, Router};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;
use throttle::Throttle;

mod asset_route;
mod assets;
mod chart;
mod deps;
mod error;
mod gate;
mod layout;
mod links;
mod login;
mod overview;
mod payload;
mod queue;
mod schedules;
mod session;
mod task;
mod text;
mod throttle;
mod viewer;

pub(crate) use gate::admit;

/// Every admin route's template, `/` included; the auth middleware lets a session cookie in on these only.
pub(crate) const ROUTES: &[&str] = &[
    "/",
    "/queues/{queue}",
    "/queues/{queue}/pause",
    "/queues/{queue}/resume",
    "/queues/{queue}/retry",
    "/tasks/{id}",
    "/tasks/{id}/retry",
    "/tasks/{id}/delete",
    "/tasks/{id}/cancel",
    "/schedules",
    "/login",
    "/logout",
    "/assets/{file}",
];

/// The routes anyone may load: the login form and the assets it needs.
pub(crate) const PUBLIC_ROUTES: &[&str] = &["/login", "/assets/{file}"];

/// Largest form body an action accepts: a CSRF token, or a token to log in.
pub(crate) const FORM_LIMIT: usize = 16 * 1024;

/// The overview, `/`, with its OpenAPI description: the router documents
/// it with the API's routes.
pub(crate) fn documented_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(overview::page))
}

/// The admin routes but `/`, with the login's own throttle: one per
/// router, which is one per server.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/queues/{queue}", get(queue::page))
        .route("/queues/{queue}/pause", post(queue::pause))
        .route("/queues/{queue}/resume", post(queue::resume))
        .route("/queues/{queue}/retry", post(queue::retry_dead))
        .route("/tasks/{id}", get(task::page))
        .route("/tasks/{id}/retry", post(task::retry))
        .route("/tasks/{id}/delete", post(task::delete))
        .route("/tasks/{id}/cancel", post(task::cancel))
        .route("/schedules", get(schedules::page))
        .route("/login", get(login::form).post(login::submit))
        .route("/logout", post(login::logout))
        .route("/assets/{file}", get(asset_route::serve))
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
        .layer(Extension(Arc::new(Throttle::default())))
}
