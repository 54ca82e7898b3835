//! Queues: the overview with counts per state and per kind, pause/resume,
//! and retrying every dead task of a queue.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use spool_core::wire::CountsJson;
use spool_core::{QueueName, QueueStats};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::ApiPath;
use crate::state::AppState;

/// One queue in the overview.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct QueueJson {
    pub name: String,
    pub paused: bool,
    pub counts: CountsJson,
    /// Counts per kind, then per state.
    pub kinds: BTreeMap<String, CountsJson>,
    /// How long the oldest ready task has been claimable; null when none is.
    pub oldest_ready_age_ms: Option<u64>,
    /// The whole tokens left in the bucket of the queue's rate_limit: the
    /// most tasks claims may take before it refills. Null without one.
    pub rate_tokens: Option<u32>,
}

/// `{"queues": [...]}`, by name.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct QueuesJson {
    pub queues: Vec<QueueJson>,
}

impl From<QueueStats> for QueueJson {
    fn from(q: QueueStats) -> Self {
        QueueJson {
            name: q.name.to_string(),
            paused: q.paused,
            counts: q.counts.into(),
            kinds: q
                .kinds
                .into_iter()
                .map(|(k, c)| (k.to_string(), c.into()))
                .collect(),
            oldest_ready_age_ms: q
                .oldest_ready_age
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            rate_tokens: q.rate_tokens,
        }
    }
}

/// Every queue with counts per state and per kind.
#[utoipa::path(
    get,
    path = "/v1/queues",
    tag = "queues",
    responses((status = 200, description = "Every queue", body = QueuesJson))
)]
pub(super) async fn overview(State(st): State<AppState>) -> Result<Json<QueuesJson>, ApiError> {
    let stats = st.call(st.store().stats()).await?;
    Ok(Json(QueuesJson {
        queues: stats.into_iter().map(Into::into).collect(),
    }))
}

/// Stop handing out the queue's tasks; enqueues still work.
#[utoipa::path(
    post,
    path = "/v1/queues/{queue}/pause",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 204, description = "Paused"))
)]
pub(super) async fn pause(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
) -> Result<StatusCode, ApiError> {
    st.call(st.store().set_paused(&queue, true)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Hand out the queue's tasks again.
#[utoipa::path(
    post,
    path = "/v1/queues/{queue}/resume",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 204, description = "Resumed"))
)]
pub(super) async fn resume(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
) -> Result<StatusCode, ApiError> {
    st.call(st.store().set_paused(&queue, false)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `{"retried": n}`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct RetriedJson {
    pub retried: u64,
}

/// Every dead task of the queue becomes ready with `attempt = 0`.
#[utoipa::path(
    post,
    path = "/v1/queues/{queue}/retry",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "How many tasks were retried", body = RetriedJson))
)]
pub(super) async fn retry_dead(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
) -> Result<Json<RetriedJson>, ApiError> {
    let retried = st.call(st.store().retry_dead(&queue)).await?;
    Ok(Json(RetriedJson { retried }))
}
