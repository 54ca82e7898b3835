//! One task, addressed by id (`/v1/tasks/{id}`) or by its queue and
//! idempotency key (`/v1/queues/{queue}/keys/{key}`): get, update, cancel,
//! and retry of a dead task.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::value::RawValue;
use spool_core::{QueueName, TaskId, TaskKey, TaskPatch, TaskRef};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::state::AppState;
use crate::wire::{self, PayloadIn, TaskJson};

/// Fields to change; absent fields stay as they are. Only a task that is not
/// leased can be changed (else 409 `lease_held`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PatchBody<'a> {
    #[serde(default, borrow, deserialize_with = "wire::present_raw")]
    #[schema(value_type = Option<Value>)]
    payload: Option<&'a RawValue>,
    payload_base64: Option<String>,
    #[schema(format = DateTime)]
    run_at: Option<String>,
    #[schema(minimum = -32768, maximum = 32767)]
    priority: Option<i16>,
}

fn patch_of(body: &JsonBody) -> Result<TaskPatch, ApiError> {
    let p: PatchBody<'_> = body.parse()?;
    let payload = wire::payload_in(PayloadIn {
        json: p.payload,
        base64: p.payload_base64,
    })?;
    let run_at = match p.run_at.as_deref() {
        Some(s) => Some(wire::timestamp("run_at", s)?),
        None => None,
    };
    Ok(TaskPatch {
        payload,
        run_at,
        priority: p.priority,
    })
}

async fn get(st: &AppState, task: TaskRef) -> Result<Json<TaskJson>, ApiError> {
    let task = st.call(st.store().get(task)).await?;
    Ok(Json(wire::task_json(&task, false)?))
}

async fn update(st: &AppState, task: TaskRef, body: &JsonBody) -> Result<Json<TaskJson>, ApiError> {
    let patch = patch_of(body)?;
    let task = st.call(st.store().update(task, patch)).await?;
    Ok(Json(wire::task_json(&task, false)?))
}

async fn cancel(st: &AppState, task: TaskRef) -> Result<StatusCode, ApiError> {
    st.call(st.store().cancel(task)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A task by id.
#[utoipa::path(
    get,
    path = "/v1/tasks/{id}",
    tag = "tasks",
    params(("id" = u64, Path, description = "Task id")),
    responses((status = 200, description = "The task (lease without token)", body = TaskJson))
)]
pub(super) async fn get_by_id(
    State(st): State<AppState>,
    ApiPath(id): ApiPath<TaskId>,
) -> Result<Json<TaskJson>, ApiError> {
    get(&st, TaskRef::Id(id)).await
}

/// Change a task that is not leased.
#[utoipa::path(
    patch,
    path = "/v1/tasks/{id}",
    tag = "tasks",
    params(("id" = u64, Path, description = "Task id")),
    request_body = PatchBody<'_>,
    responses((status = 200, description = "The updated task", body = TaskJson))
)]
pub(super) async fn update_by_id(
    State(st): State<AppState>,
    ApiPath(id): ApiPath<TaskId>,
    body: JsonBody,
) -> Result<Json<TaskJson>, ApiError> {
    update(&st, TaskRef::Id(id), &body).await
}

/// Delete a task in any state; a later ack by its lease holder gets 404.
#[utoipa::path(
    delete,
    path = "/v1/tasks/{id}",
    tag = "tasks",
    params(("id" = u64, Path, description = "Task id")),
    responses((status = 204, description = "Cancelled"))
)]
pub(super) async fn cancel_by_id(
    State(st): State<AppState>,
    ApiPath(id): ApiPath<TaskId>,
) -> Result<StatusCode, ApiError> {
    cancel(&st, TaskRef::Id(id)).await
}

/// A live task by its idempotency key.
#[utoipa::path(
    get,
    path = "/v1/queues/{queue}/keys/{key}",
    tag = "tasks",
    params(
        ("queue" = String, Path, description = "Queue name"),
        ("key" = String, Path, description = "Idempotency key (percent-encoded)"),
    ),
    responses((status = 200, description = "The task (lease without token)", body = TaskJson))
)]
pub(super) async fn get_by_key(
    State(st): State<AppState>,
    ApiPath((queue, key)): ApiPath<(QueueName, TaskKey)>,
) -> Result<Json<TaskJson>, ApiError> {
    get(&st, TaskRef::Key(queue, key)).await
}

/// Change a task addressed by key.
#[utoipa::path(
    patch,
    path = "/v1/queues/{queue}/keys/{key}",
    tag = "tasks",
    params(
        ("queue" = String, Path, description = "Queue name"),
        ("key" = String, Path, description = "Idempotency key (percent-encoded)"),
    ),
    request_body = PatchBody<'_>,
    responses((status = 200, description = "The updated task", body = TaskJson))
)]
pub(super) async fn update_by_key(
    State(st): State<AppState>,
    ApiPath((queue, key)): ApiPath<(QueueName, TaskKey)>,
    body: JsonBody,
) -> Result<Json<TaskJson>, ApiError> {
    update(&st, TaskRef::Key(queue, key), &body).await
}

/// Cancel a task addressed by key.
#[utoipa::path(
    delete,
    path = "/v1/queues/{queue}/keys/{key}",
    tag = "tasks",
    params(
        ("queue" = String, Path, description = "Queue name"),
        ("key" = String, Path, description = "Idempotency key (percent-encoded)"),
    ),
    responses((status = 204, description = "Cancelled"))
)]
pub(super) async fn cancel_by_key(
    State(st): State<AppState>,
    ApiPath((queue, key)): ApiPath<(QueueName, TaskKey)>,
) -> Result<StatusCode, ApiError> {
    cancel(&st, TaskRef::Key(queue, key)).await
}

/// A dead task becomes ready with `attempt = 0`.
#[utoipa::path(
    post,
    path = "/v1/tasks/{id}/retry",
    tag = "tasks",
    params(("id" = u64, Path, description = "Task id")),
    responses((status = 200, description = "The task, now ready", body = TaskJson))
)]
pub(super) async fn retry(
    State(st): State<AppState>,
    ApiPath(id): ApiPath<TaskId>,
) -> Result<Json<TaskJson>, ApiError> {
    let task = st.call(st.store().retry(id)).await?;
    Ok(Json(wire::task_json(&task, false)?))
}
