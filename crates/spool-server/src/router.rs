//! The router: every route of [`crate::api`] and of the admin page behind
//! the middleware stack, with JSON answers for unknown routes (404) and
//! wrong methods (405). It is where the parts meet: it plugs the admin
//! page's session check into auth, starts the activity monitor's sampler,
//! and hands the OpenAPI document its routes.
//!
//! Layers, outermost first: keep-alive after an unread body
//! ([`crate::unread`]) → observe (logs, metrics) → the gate (header
//! limits 431, concurrency 429, request timeout 408, declared body 413,
//! auth 401; [`crate::limits::gate`]) → body limit while reading (413) →
//! handler.

use std::sync::{Arc, OnceLock};

use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Uri};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::{Extension, Router};
use tokio::sync::Semaphore;
use utoipa_axum::router::OpenApiRouter;

use crate::api::ApiDocument;
use crate::error::ApiError;
use crate::limits::{BodyLimit, Gate, HeaderLimits};
use crate::openapi::document;
use crate::state::AppState;
use crate::{admin, api, limits, metrics, monitor, observe, unread};

/// The whole API as a service, without a socket (tests call it directly).
pub fn router(state: AppState) -> Router {
    // Install the recorder before the first request records anything.
    metrics::handle();
    let config = state.config().clone();
    start_monitor(&state);
    let (routes, _) = documented().split_for_parts();
    routes
        .merge(admin::routes())
        .layer(Extension(ApiDocument(Arc::new(openapi()))))
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(Extension(BodyLimit(config.max_body)))
        .layer(DefaultBodyLimit::max(config.max_body))
        .layer(from_fn_with_state(
            Arc::new(Gate {
                headers: HeaderLimits {
                    count: config.max_headers,
                    bytes: config.max_header_bytes,
                },
                body: BodyLimit(config.max_body),
                timeout: config.request_timeout,
                slots: Arc::new(Semaphore::new(config.concurrency_limit)),
                state: state.clone(),
                sessions: admin::admit,
            }),
            limits::gate,
        ))
        .layer(from_fn(observe::observe))
        .layer(from_fn(unread::keep_alive))
        .with_state(state)
}

/// The OpenAPI document of [`router`]'s API, built once.
pub fn openapi() -> utoipa::openapi::OpenApi {
    static DOC: OnceLock<utoipa::openapi::OpenApi> = OnceLock::new();
    DOC.get_or_init(|| document(documented().split_for_parts().1))
        .clone()
}

/// Every route the OpenAPI document describes: the API's, and the admin
/// page's overview.
fn documented() -> OpenApiRouter<AppState> {
    api::routes().merge(admin::documented_routes())
}

/// Starts sampling the activity counters (see [`monitor`]), once per
/// state; it stops when the state's last clone is dropped.
fn start_monitor(state: &AppState) {
    if state.monitor().claim_sampler() {
        monitor::spawn(
            state.store_weak(),
            state.monitor_weak(),
            state.config().store_timeout,
        );
    }
}

/// Paths echoed in messages are cut, so a hostile 64 KiB path is not
/// echoed back whole.
fn shown(uri: &Uri) -> String {
    uri.path().chars().take(200).collect()
}

async fn no_route(uri: Uri) -> ApiError {
    ApiError::NoRoute(shown(&uri))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: shown(&uri),
    }
}
