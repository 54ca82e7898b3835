//! What a lease holder does with its task: ack, fail, release, extend,
//! snooze, and the batch ack.
//!
//! Every call needs the current lease token; a wrong or stale one gets 409
//! `lease_lost` and changes nothing.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use spool_core::{Ack, FailRequest, LeaseToken, StoreError, TaskId, TaskResult, TaskState};
use utoipa::ToSchema;

use super::token;
use crate::error::{ApiError, ErrorDetail};
use crate::extract::{ApiJson, ApiPath};
use crate::metrics::{queue_label, COMPLETED, DEAD, FAILED};
use crate::state::AppState;
use crate::wire::{self, TaskJson};

/// `{token, reschedule_at?, result?}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AckBody {
    pub token: String,
    /// Instead of completing, re-arm the task as scheduled at this time with
    /// `attempt = 0`.
    #[schema(format = DateTime)]
    pub reschedule_at: Option<String>,
    /// Any JSON of at most 4 KiB, written compactly: handed to the tasks
    /// that wait for this one, which read it in their `parent_results`.
    /// Not with `reschedule_at`; `null` is no result.
    pub result: Option<serde_json::Value>,
}

impl AckBody {
    /// What the ack asks for: `bad_request` for a result over the limit or
    /// given with `reschedule_at`.
    fn ack(&self) -> Result<Ack, ApiError> {
        let at = match self.reschedule_at.as_deref() {
            Some(s) => Some(wire::timestamp("reschedule_at", s)?),
            None => None,
        };
        Ok(match (at, &self.result) {
            (Some(_), Some(_)) => return Err(ApiError::Store(StoreError::bad_request(
                "result and reschedule_at exclude each other: a rescheduled task is not completed",
            ))),
            (Some(at), None) => Ack::Reschedule(at),
            (None, Some(r)) => Ack::Result(TaskResult::new(r)?),
            (None, None) => Ack::Done,
        })
    }
}

/// `{token, message, retry_at?, discard?}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FailBody {
    pub token: String,
    /// Recorded in the task's errors (cut to 4 KiB).
    pub message: String,
    /// Retry at this time instead of after the backoff; ≤ now is at once.
    #[schema(format = DateTime)]
    pub retry_at: Option<String>,
    /// Dead at once, whatever attempts remain.
    #[serde(default)]
    pub discard: bool,
}

/// `{token}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReleaseBody {
    pub token: String,
}

/// `{token, lease_ms}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ExtendBody {
    pub token: String,
    /// The lease now expires this long from now.
    #[schema(minimum = 1)]
    pub lease_ms: u64,
}

/// `{token, run_at}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SnoozeBody {
    pub token: String,
    /// When the task becomes claimable again (RFC 3339).
    #[schema(format = DateTime)]
    pub run_at: String,
}

/// Complete the task (delete it), or re-arm it with `reschedule_at`.
#[utoipa::path(
    post,
    path = "/v1/tasks/{id}/ack",
    tag = "leases",
    params(("id" = u64, Path, description = "Task id")),
    request_body = AckBody,
    responses((status = 204, description = "Completed or re-armed"))
)]
pub(super) async fn ack(
    State(st): State<AppState>,
    ApiPath(id): ApiPath<TaskId>,
    ApiJson(body): ApiJson<AckBody>,
) -> Result<StatusCode, ApiError> {
    let ack = body.ack()?;
    let token = token::resolve(&st, id, &body.token).await?;
    st.call(st.store().ack(id, token, ack)).await?;
    metrics::counter!(COMPLETED).increment(1);
    st.monitor().count_completed(1);
    Ok(StatusCode::NO_CONTENT)
}

/// Record a failure: retried later, or dead.
#[utoipa::path(
    post,
    path = "/v1/tasks/{id}/fail",
    tag = "leases",
    params(("id" = u64, Path, description = "Task id")),
    request_body = FailBody,
    responses((status = 200, description = "The task after the failure", body = TaskJson))
)]
pub(super) async fn fail(
    State(st): State<AppState>,
    ApiPath(id): ApiPath<TaskId>,
    ApiJson(body): ApiJson<FailBody>,
) -> Result<Json<TaskJson>, ApiError> {
    let retry_at = match body.retry_at.as_deref() {
        Some(s) => Some(wire::timestamp("retry_at", s)?),
        None => None,
    };
    let token = token::resolve(&st, id, &body.token).await?;
    let req = FailRequest {
        message: body.message,
        retry_at,
        discard: body.discard,
    };
    let task = st.call(st.store().fail(id, token, req)).await?;
    let queue = queue_label(task.queue.as_str(), true);
    metrics::counter!(FAILED, "queue" => queue.clone()).increment(1);
    if task.state == TaskState::Dead {
        metrics::counter!(DEAD, "queue" => queue).increment(1);
    }
    Ok(Json(wire::task_json(&task, false)?))
}

/// Give the task back unrun: ready, and the attempt is not counted.
#[utoipa::path(
    post,
    path = "/v1/tasks/{id}/release",
    tag = "leases",
    params(("id" = u64, Path, description = "Task id")),
    request_body = ReleaseBody,
    responses((status = 204, description = "Released"))
)]
pub(super) async fn release(
    State(st): State<AppState>,
    ApiPath(id): ApiPath<TaskId>,
    ApiJson(body): ApiJson<ReleaseBody>,
) -> Result<StatusCode, ApiError> {
    let token = token::resolve(&st, id, &body.token).await?;
    st.call(st.store().release(id, token)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Heartbeat: the lease now expires `lease_ms` from now.
#[utoipa::path(
    post,
    path = "/v1/tasks/{id}/extend",
    tag = "leases",
    params(("id" = u64, Path, description = "Task id")),
    request_body = ExtendBody,
    responses((status = 200, description = "The task with its new expiry", body = TaskJson))
)]
pub(super) async fn extend(
    State(st): State<AppState>,
    ApiPath(id): ApiPath<TaskId>,
    ApiJson(body): ApiJson<ExtendBody>,
) -> Result<Json<TaskJson>, ApiError> {
    let lease = wire::non_zero_ms("lease_ms", body.lease_ms)?;
    let token = token::resolve(&st, id, &body.token).await?;
    let task = st.call(st.store().extend(id, token, lease)).await?;
    Ok(Json(wire::task_json(&task, false)?))
}

/// Give the task back to run at `run_at`, not counting the attempt (the
/// runtime's "snooze"; an addition to docs/spec.md §7 so the remote store is whole).
#[utoipa::path(
    post,
    path = "/v1/tasks/{id}/snooze",
    tag = "leases",
    params(("id" = u64, Path, description = "Task id")),
    request_body = SnoozeBody,
    responses((status = 200, description = "The snoozed task", body = TaskJson))
)]
pub(super) async fn snooze(
    State(st): State<AppState>,
    ApiPath(id): ApiPath<TaskId>,
    ApiJson(body): ApiJson<SnoozeBody>,
) -> Result<Json<TaskJson>, ApiError> {
    let run_at = wire::timestamp("run_at", &body.run_at)?;
    let token = token::resolve(&st, id, &body.token).await?;
    let task = st.call(st.store().snooze(id, token, run_at)).await?;
    Ok(Json(wire::task_json(&task, false)?))
}

/// One item of a batch ack.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AckItem {
    pub id: u64,
    pub token: String,
}

/// `{"acks": [{id, token}]}`: at most 10,000 items.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct BatchAckBody {
    #[serde(deserialize_with = "wire::at_most_max_batch")]
    pub acks: Vec<AckItem>,
}

/// The outcome of one item: 204 done, 404 gone, 409 lease lost.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AckResult {
    pub id: u64,
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

/// `{"results": [...]}`, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct BatchAckResponse {
    pub results: Vec<AckResult>,
}

fn item_result(id: u64, outcome: Result<(), StoreError>) -> AckResult {
    match outcome {
        Ok(()) => AckResult {
            id,
            status: StatusCode::NO_CONTENT.as_u16(),
            error: None,
        },
        Err(e) => {
            let e = ApiError::Store(e);
            let (status, code) = e.status_and_code();
            AckResult {
                id,
                status: status.as_u16(),
                error: Some(ErrorDetail {
                    code,
                    message: e.public_message(),
                }),
            }
        }
    }
}

/// Ack many tasks at once; each item succeeds or fails on its own.
#[utoipa::path(
    post,
    path = "/v1/ack",
    tag = "leases",
    request_body = BatchAckBody,
    responses((status = 200, description = "Per-item results in request order", body = BatchAckResponse))
)]
pub(super) async fn ack_many(
    State(st): State<AppState>,
    ApiJson(body): ApiJson<BatchAckBody>,
) -> Result<Json<BatchAckResponse>, ApiError> {
    // Items with a token the store could never have issued are answered
    // here (404 or 409 as for a single ack); the rest go in one store call.
    let mut answered: BTreeMap<usize, AckResult> = BTreeMap::new();
    let mut to_store: Vec<(TaskId, LeaseToken)> = Vec::with_capacity(body.acks.len());
    let mut positions = Vec::with_capacity(body.acks.len());
    for (i, item) in body.acks.iter().enumerate() {
        let id = TaskId(item.id);
        match token::parse(&item.token) {
            Some(t) => {
                to_store.push((id, t));
                positions.push(i);
            }
            None => {
                let outcome = match st.call(st.store().get(id.into())).await {
                    Ok(_) => Err(StoreError::LeaseLost),
                    Err(ApiError::Store(e)) => Err(e),
                    Err(other) => return Err(other),
                };
                answered.insert(i, item_result(item.id, outcome));
            }
        }
    }
    if !to_store.is_empty() {
        let outcomes = st.call(st.store().ack_many(to_store)).await?;
        if outcomes.len() != positions.len() {
            return Err(ApiError::Store(StoreError::Internal(format!(
                "ack_many answered {} results for {} items",
                outcomes.len(),
                positions.len()
            ))));
        }
        let done = outcomes.iter().filter(|o| o.is_ok()).count();
        metrics::counter!(COMPLETED).increment(done as u64);
        st.monitor().count_completed(done as u64);
        for (i, outcome) in positions.into_iter().zip(outcomes) {
            answered.insert(i, item_result(body.acks[i].id, outcome));
        }
    }
    Ok(Json(BatchAckResponse {
        results: answered.into_values().collect(),
    }))
}
