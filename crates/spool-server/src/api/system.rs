//! Endpoints about the server itself: liveness, the store's clock, metrics
//! and the OpenAPI document.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use spool_core::{QueueStats, StoreError};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use crate::{metrics, rfc3339};

/// How long `/healthz` waits for the store: probes have short timeouts.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// `{"status": "ok"}`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct HealthJson {
    #[schema(example = "ok")]
    pub status: &'static str,
}

/// Liveness: 200 while the store answers, 503 `unavailable` while it does
/// not or while its latest call found it down. Never needs a token.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "system",
    security(()),
    responses(
        (status = 200, description = "The server and its store work", body = HealthJson),
        (status = 503, description = "The store is down", body = ErrorBody),
    )
)]
pub(super) async fn healthz(State(st): State<AppState>) -> Result<Json<HealthJson>, ApiError> {
    match tokio::time::timeout(HEALTH_TIMEOUT, st.store().now()).await {
        Ok(Ok(_)) if !st.store_seems_down() => Ok(Json(HealthJson { status: "ok" })),
        Ok(Ok(_)) => {
            // The clock answers but the latest real call failed: ask again
            // with a call that touches the store's state.
            st.call(st.store().stats()).await?;
            Ok(Json(HealthJson { status: "ok" }))
        }
        Ok(Err(e)) => Err(ApiError::Store(e)),
        Err(_) => Err(ApiError::StoreTimeout(HEALTH_TIMEOUT)),
    }
}

/// `{"now": timestamp}`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct TimeJson {
    /// The store's clock (RFC 3339, UTC, milliseconds).
    #[schema(format = DateTime, example = "2026-11-21T23:59:00.123Z")]
    pub now: String,
}

/// The store's clock, the only clock tasks are judged by (an addition to
/// docs/spec.md §7 for remote clients).
#[utoipa::path(
    get,
    path = "/v1/time",
    tag = "system",
    responses((status = 200, description = "The store's current time", body = TimeJson))
)]
pub(super) async fn time(State(st): State<AppState>) -> Result<Json<TimeJson>, ApiError> {
    let now = st.call(st.store().now()).await?;
    Ok(Json(TimeJson {
        now: rfc3339::format(now)?,
    }))
}

/// Prometheus text exposition; per-queue gauges are refreshed from the
/// store first.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "system",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain; version=0.0.4", body = String))
)]
pub(super) async fn metrics(State(st): State<AppState>) -> Result<Response, ApiError> {
    match st.call(st.store().stats()).await {
        Ok(stats) => {
            metrics::refresh_gauges(&stats);
            refresh_group_gauges(&st, &stats).await;
        }
        // Counters are still worth serving while the store is down.
        Err(e) => tracing::warn!(error = %e, "metrics: no stats from the store"),
    }
    Ok((
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        metrics::render(),
    )
        .into_response())
}

/// Each queue's busiest group, for its backlog gauge; a queue with nothing
/// waiting or leased has none to ask about.
async fn refresh_group_gauges(st: &AppState, stats: &[QueueStats]) {
    for q in stats {
        let c = q.counts;
        let busiest = if c.ready + c.scheduled + c.leased == 0 {
            Ok(Vec::new())
        } else {
            st.call(st.store().groups(&q.name, 1)).await
        };
        match busiest {
            Ok(groups) => metrics::refresh_group_gauge(&q.name, groups.first()),
            Err(e) => {
                tracing::warn!(error = %e, queue = %q.name, "metrics: no groups from the store")
            }
        }
    }
}

/// The OpenAPI document the router serves, handed to [`openapi`] by the
/// router, which made it from the routes.
#[derive(Clone)]
pub(crate) struct ApiDocument(pub(crate) Arc<utoipa::openapi::OpenApi>);

/// This document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "system",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object))
)]
pub(super) async fn openapi(Extension(doc): Extension<ApiDocument>) -> Result<Response, ApiError> {
    let text = doc
        .0
        .to_json()
        .map_err(|e| ApiError::Store(StoreError::Internal(e.to_string())))?;
    Ok(([(CONTENT_TYPE, "application/json")], text).into_response())
}
