//! A queue's settings (docs/spec.md §4): `PUT` creates the queue or changes them,
//! `GET` reads them.
//!
//! `PUT` hands the store only the fields it was given: the store applies
//! them to the settings in force atomically, so a pause or another change,
//! through any node, is never undone by a stale read here.

use axum::extract::State;
use axum::Json;
use spool_core::wire::{RateLimitJson, SettingsBody, SettingsJson};
use spool_core::{QueueChange, QueueName, RateLimit, StoreError};

use crate::error::ApiError;
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use crate::wire;

/// The change a body asks for. Each field is checked here as a wire value;
/// the settings it makes, as a whole, by the store.
fn change(body: SettingsBody) -> Result<QueueChange, StoreError> {
    let ms = |field, v: Option<u64>| v.map(|v| wire::duration_ms(field, v)).transpose();
    Ok(QueueChange {
        lease: ms("lease_ms", body.lease_ms)?,
        max_attempts: body.max_attempts,
        backoff_base: ms("backoff_base_ms", body.backoff_base_ms)?,
        backoff_max: ms("backoff_max_ms", body.backoff_max_ms)?,
        dedup_window: ms("dedup_window_ms", body.dedup_window_ms)?,
        max_payload: body.max_payload,
        paused: body.paused,
        rate_limit: rate_limit("rate_limit", body.rate_limit)?,
        max_leased: body.max_leased,
        group_concurrency: body.group_concurrency,
        group_rate_limit: rate_limit("group_rate_limit", body.group_rate_limit)?,
    })
}

/// A rate limit as the body gives it (or its removal, `null`), for the
/// field `name`; its bounds are the store's to check.
fn rate_limit(
    name: &str,
    field: Option<Option<RateLimitJson>>,
) -> Result<Option<Option<RateLimit>>, StoreError> {
    let one = |r: RateLimitJson| {
        Ok::<_, StoreError>(RateLimit {
            limit: r.limit,
            period: wire::duration_ms(&format!("{name}.period_ms"), r.period_ms)?,
            burst: r.burst,
        })
    };
    field.map(|limit| limit.map(one).transpose()).transpose()
}

/// Create a queue or change its settings.
#[utoipa::path(
    put,
    path = "/v1/queues/{queue}",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = SettingsBody,
    responses((status = 200, description = "The settings now in force", body = SettingsJson))
)]
pub(super) async fn put_settings(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
    ApiJson(body): ApiJson<SettingsBody>,
) -> Result<Json<SettingsJson>, ApiError> {
    // The store applies the change to the settings in force, atomically:
    // no read here, so nothing another node changes in between is lost.
    let now = st.call(st.store().put_queue(&queue, change(body)?)).await?;
    Ok(Json(SettingsJson::from(&now)))
}

/// A queue's settings.
#[utoipa::path(
    get,
    path = "/v1/queues/{queue}",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "The queue's settings", body = SettingsJson))
)]
pub(super) async fn get_settings(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
) -> Result<Json<SettingsJson>, ApiError> {
    let s = st.call(st.store().get_queue(&queue)).await?;
    Ok(Json(SettingsJson::from(&s)))
}
