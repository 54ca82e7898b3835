//! `GET /v1/queues/{queue}/groups`: a queue's groups that have tasks
//! waiting or leased, busiest first (docs/spec.md §4, "Groups").

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use spool_core::groups::validate_limit;
use spool_core::{GroupStats, QueueName};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;

/// Groups reported when the request does not say how many.
pub(crate) const DEFAULT_LIMIT: usize = 100;

/// How many groups to report.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct GroupsQuery {
    /// 1..1000, default 100.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
}

/// One group of a queue.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct GroupJson {
    pub group: String,
    /// Its tasks waiting to run: ready or scheduled.
    pub waiting: u64,
    /// Its tasks leased now.
    pub leased: u64,
    /// The whole tokens left in its bucket under the queue's
    /// group_rate_limit. Null without one.
    pub rate_tokens: Option<u32>,
}

impl From<GroupStats> for GroupJson {
    fn from(g: GroupStats) -> Self {
        GroupJson {
            group: g.group.to_string(),
            waiting: g.waiting,
            leased: g.leased,
            rate_tokens: g.rate_tokens,
        }
    }
}

/// `{"groups": [...]}`: most waiting first, then most leased, then by name.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct GroupsJson {
    pub groups: Vec<GroupJson>,
}

/// A queue's busiest groups; none for a queue that does not exist.
#[utoipa::path(
    get,
    path = "/v1/queues/{queue}/groups",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name"), GroupsQuery),
    responses((status = 200, description = "The busiest groups", body = GroupsJson))
)]
pub(super) async fn groups(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
    ApiQuery(q): ApiQuery<GroupsQuery>,
) -> Result<Json<GroupsJson>, ApiError> {
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    validate_limit(limit)?;
    let groups = st.call(st.store().groups(&queue, limit)).await?;
    Ok(Json(GroupsJson {
        groups: groups.into_iter().map(Into::into).collect(),
    }))
}
