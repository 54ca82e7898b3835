//! `GET /v1/queues/{queue}/tasks`: a queue's tasks a page at a time, by
//! state, oldest first or by attempts descending.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use spool_core::store::MAX_LIST_LIMIT;
use spool_core::{ListOrder, ListRequest, QueueName};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use crate::wire::{self, StateName, TaskJson};

/// The order of a list.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum OrderName {
    /// Oldest id first (the default).
    Id,
    /// Most attempts first, then id.
    AttemptsDesc,
}

/// Which page of a queue's tasks.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Only tasks in this state.
    pub state: Option<StateName>,
    pub order: Option<OrderName>,
    /// 1..1000, default 100.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Opaque, from the previous page's `next_cursor`.
    pub cursor: Option<String>,
}

/// A page of tasks.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct TaskPageJson {
    pub tasks: Vec<TaskJson>,
    /// Where the next page starts; null on the last page.
    pub next_cursor: Option<String>,
}

/// A queue's tasks, a page at a time.
#[utoipa::path(
    get,
    path = "/v1/queues/{queue}/tasks",
    tag = "tasks",
    params(("queue" = String, Path, description = "Queue name"), ListQuery),
    responses((status = 200, description = "One page", body = TaskPageJson))
)]
pub(super) async fn list(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<TaskPageJson>, ApiError> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=MAX_LIST_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit must be between 1 and {MAX_LIST_LIMIT}, got {limit}"
        )));
    }
    let req = ListRequest {
        queue,
        state: q.state.map(Into::into),
        order: match q.order {
            Some(OrderName::AttemptsDesc) => ListOrder::AttemptsDesc,
            Some(OrderName::Id) | None => ListOrder::Id,
        },
        limit,
        cursor: q.cursor,
    };
    let page = st.call(st.store().list(req)).await?;
    let tasks = page
        .tasks
        .iter()
        .map(|t| wire::task_json(t, false))
        .collect::<Result<_, _>>()?;
    Ok(Json(TaskPageJson {
        tasks,
        next_cursor: page.next_cursor,
    }))
}
