//! `POST /v1/queues/{queue}/claim`: lease up to `max` ready tasks, waiting
//! up to `wait_ms` for one (long poll).
//!
//! Out-of-range values are refused, never clamped. The store call may take
//! the wait plus the store timeout before the request gives up with 503.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use spool_core::store::{MAX_CLAIM, MAX_WAIT};
use spool_core::{ClaimRequest, QueueName};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::{ApiJson, ApiPath};
use crate::metrics::{queue_label, CLAIMED, CLAIM_DURATION};
use crate::state::AppState;
use crate::wire::{self, TasksJson};

/// What a worker asks for.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ClaimBody {
    /// The worker's id (1..256 bytes), recorded as the lease owner.
    pub worker: String,
    /// 1..1000, default 1.
    #[schema(minimum = 1, maximum = 1000)]
    pub max: Option<u32>,
    /// Defaults to the queue's lease; a task's own `lease_ms` wins.
    #[schema(minimum = 1)]
    pub lease_ms: Option<u64>,
    /// 0..30000, default 0: how long to wait for a ready task.
    #[schema(minimum = 0, maximum = 30000)]
    pub wait_ms: Option<u64>,
}

fn claim_request(queue: QueueName, body: ClaimBody) -> Result<ClaimRequest, ApiError> {
    let max = body.max.unwrap_or(1);
    if !(1..=MAX_CLAIM).contains(&max) {
        return Err(ApiError::bad_request(format!(
            "max must be between 1 and {MAX_CLAIM}, got {max}"
        )));
    }
    let wait = Duration::from_millis(body.wait_ms.unwrap_or(0));
    if wait > MAX_WAIT {
        return Err(ApiError::bad_request(format!(
            "wait_ms must be between 0 and {}, got {}",
            MAX_WAIT.as_millis(),
            wait.as_millis()
        )));
    }
    let mut req = ClaimRequest::new(queue, body.worker).max(max).wait(wait);
    if let Some(ms) = body.lease_ms {
        req = req.lease(wire::non_zero_ms("lease_ms", ms)?);
    }
    req.validate()?;
    Ok(req)
}

/// Lease ready tasks; the answer carries each lease's token.
#[utoipa::path(
    post,
    path = "/v1/queues/{queue}/claim",
    tag = "leases",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = ClaimBody,
    responses(
        (status = 200, description = "Leased tasks in claim order (empty when none is ready or the queue is paused)", body = TasksJson),
    )
)]
pub(super) async fn claim(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
    ApiJson(body): ApiJson<ClaimBody>,
) -> Result<Json<TasksJson>, ApiError> {
    let req = claim_request(queue.clone(), body)?;
    let wait = req.wait;
    let start = Instant::now();
    let tasks = st.call_with(wait, st.store().claim(req)).await?;
    // An empty claim does not show the queue exists: it may be made up.
    let label = queue_label(queue.as_str(), !tasks.is_empty());
    metrics::histogram!(CLAIM_DURATION, "queue" => label.clone())
        .record(start.elapsed().as_secs_f64());
    if !tasks.is_empty() {
        metrics::counter!(CLAIMED, "queue" => label).increment(tasks.len() as u64);
    }
    let tasks = tasks
        .iter()
        .map(|t| wire::task_json(t, true))
        .collect::<Result<_, _>>()?;
    Ok(Json(TasksJson { tasks }))
}
