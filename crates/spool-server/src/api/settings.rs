//! A queue's settings (docs/spec.md §4): `PUT` creates the queue or changes them,
//! `GET` reads them.
//!
//! `PUT` hands the store only the fields it was given: the store applies
//! them to the settings in force atomically, so a pause or another change,
//! through any node, is never undone by a stale read here.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use spool_core::time::duration_millis;
use spool_core::{QueueChange, QueueName, QueueSettings, StoreError};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use crate::wire;

/// A queue's settings (docs/spec.md §4).
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsJson {
    pub lease_ms: u64,
    pub max_attempts: u32,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    pub dedup_window_ms: u64,
    pub max_payload: u64,
    pub paused: bool,
}

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(duration_millis(d)).unwrap_or(0)
}

impl From<QueueSettings> for SettingsJson {
    fn from(s: QueueSettings) -> Self {
        SettingsJson {
            lease_ms: ms(s.lease),
            max_attempts: s.max_attempts,
            backoff_base_ms: ms(s.backoff_base),
            backoff_max_ms: ms(s.backoff_max),
            dedup_window_ms: ms(s.dedup_window),
            max_payload: s.max_payload,
            paused: s.paused,
        }
    }
}

/// New settings. Absent fields keep the queue's current values, or the
/// defaults when the queue does not exist yet.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsBody {
    pub lease_ms: Option<u64>,
    pub max_attempts: Option<u32>,
    pub backoff_base_ms: Option<u64>,
    pub backoff_max_ms: Option<u64>,
    pub dedup_window_ms: Option<u64>,
    /// Bytes, at most 67108864 (64 MiB).
    pub max_payload: Option<u64>,
    pub paused: Option<bool>,
}

impl SettingsBody {
    /// The change the body asks for. Each field is checked here as a wire
    /// value; the settings it makes, as a whole, by the store.
    fn change(self) -> Result<QueueChange, StoreError> {
        let ms = |field, v: Option<u64>| v.map(|v| wire::duration_ms(field, v)).transpose();
        Ok(QueueChange {
            lease: ms("lease_ms", self.lease_ms)?,
            max_attempts: self.max_attempts,
            backoff_base: ms("backoff_base_ms", self.backoff_base_ms)?,
            backoff_max: ms("backoff_max_ms", self.backoff_max_ms)?,
            dedup_window: ms("dedup_window_ms", self.dedup_window_ms)?,
            max_payload: self.max_payload,
            paused: self.paused,
        })
    }
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
pub async fn put_settings(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
    ApiJson(body): ApiJson<SettingsBody>,
) -> Result<Json<SettingsJson>, ApiError> {
    // The store applies the change to the settings in force, atomically:
    // no read here, so nothing another node changes in between is lost.
    let now = st
        .call(st.store().put_queue(&queue, body.change()?))
        .await?;
    Ok(Json(now.into()))
}

/// A queue's settings.
#[utoipa::path(
    get,
    path = "/v1/queues/{queue}",
    tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "The queue's settings", body = SettingsJson))
)]
pub async fn get_settings(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
) -> Result<Json<SettingsJson>, ApiError> {
    let s = st.call(st.store().get_queue(&queue)).await?;
    Ok(Json(s.into()))
}
