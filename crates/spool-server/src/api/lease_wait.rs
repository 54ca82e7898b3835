//! `POST /v1/leases/wait`: which of a worker's leases are lost, waiting up
//! to `wait_ms` for one to be (long poll). How a remote worker learns that
//! a task it runs was cancelled (docs/spec.md §3, wait_leases_lost).
//!
//! A token the store could never have issued is a lease nobody holds: it is
//! answered as lost at once, beside whatever else the store finds lost then.
//! RESP's `LEASEWAIT` answers through [`lost_leases`] too.

use std::time::Duration;

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use spool_core::store::validate_lease_wait;
use spool_core::{LeaseToken, TaskId};
use utoipa::ToSchema;

use super::token;
use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::state::AppState;
use crate::wire;

/// One lease: a task id and the token its claim answered.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct LeaseItem {
    pub id: u64,
    pub token: String,
}

/// `{"leases": [{id, token}], "wait_ms"?}`: 1 to 10,000 leases.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct LeaseWaitBody {
    #[serde(deserialize_with = "wire::at_most_max_batch")]
    pub leases: Vec<LeaseItem>,
    /// 0..30000, default 0: how long to wait for a lease to be lost.
    #[schema(minimum = 0, maximum = 30000)]
    pub wait_ms: Option<u64>,
}

/// `{"lost": [id, ...]}`: the leases no longer held, in request order;
/// empty when none was lost within the wait.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct LostJson {
    pub lost: Vec<u64>,
}

/// The ids of the leases among `leases` that are lost, in their order;
/// `None` is a token the store never issues. Waits up to `wait` only when
/// every token could be the store's and none is lost yet.
pub(crate) async fn lost_leases(
    st: &AppState,
    leases: Vec<(TaskId, Option<LeaseToken>)>,
    wait: Duration,
) -> Result<Vec<TaskId>, ApiError> {
    validate_lease_wait(leases.len(), wait)?;
    let well_formed: Vec<(TaskId, LeaseToken)> = leases
        .iter()
        .filter_map(|&(id, token)| Some((id, token?)))
        .collect();
    if well_formed.is_empty() {
        return Ok(leases.into_iter().map(|(id, _)| id).collect());
    }
    // Some are lost already: answer at once, with the store's look now.
    let wait = if well_formed.len() < leases.len() {
        Duration::ZERO
    } else {
        wait
    };
    let found = st
        .call_with(wait, st.store().wait_leases_lost(&well_formed, wait))
        .await?;
    // The store answers in its input's order: merge it back in place.
    let mut found = found.into_iter().peekable();
    let mut lost = Vec::new();
    for (id, token) in leases {
        if token.is_none() || found.next_if_eq(&id).is_some() {
            lost.push(id);
        }
    }
    Ok(lost)
}

/// Which of these leases are lost; waits up to `wait_ms` for one to be.
#[utoipa::path(
    post,
    path = "/v1/leases/wait",
    tag = "leases",
    request_body = LeaseWaitBody,
    responses(
        (status = 200, description = "The leases no longer held (the task cancelled or gone, the lease expired or taken over), in request order; empty when none was lost within the wait", body = LostJson),
    )
)]
pub(super) async fn wait(
    State(st): State<AppState>,
    ApiJson(body): ApiJson<LeaseWaitBody>,
) -> Result<Json<LostJson>, ApiError> {
    let wait = Duration::from_millis(body.wait_ms.unwrap_or(0));
    let leases = body
        .leases
        .iter()
        .map(|l| (TaskId(l.id), token::parse(&l.token)))
        .collect();
    let lost = lost_leases(&st, leases, wait).await?;
    Ok(Json(LostJson {
        lost: lost.into_iter().map(|id| id.0).collect(),
    }))
}
