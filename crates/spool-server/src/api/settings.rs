//! A queue's settings (docs/spec.md §4): `PUT` creates the queue or changes them,
//! `GET` reads them.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use spool_core::settings::MAX_PAYLOAD_LIMIT;
use spool_core::time::duration_millis;
use spool_core::{QueueName, QueueSettings, StoreError};
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

fn apply(mut s: QueueSettings, b: SettingsBody) -> Result<QueueSettings, StoreError> {
    if let Some(v) = b.lease_ms {
        s.lease = wire::non_zero_ms("lease_ms", v)?;
    }
    if let Some(v) = b.max_attempts {
        s.max_attempts = v;
    }
    if let Some(v) = b.backoff_base_ms {
        s.backoff_base = wire::duration_ms("backoff_base_ms", v)?;
    }
    if let Some(v) = b.backoff_max_ms {
        s.backoff_max = wire::duration_ms("backoff_max_ms", v)?;
    }
    if let Some(v) = b.dedup_window_ms {
        s.dedup_window = wire::duration_ms("dedup_window_ms", v)?;
    }
    if let Some(v) = b.max_payload {
        if v > MAX_PAYLOAD_LIMIT {
            return Err(StoreError::bad_request(format!(
                "max_payload must be at most {MAX_PAYLOAD_LIMIT} (64 MiB), got {v}"
            )));
        }
        s.max_payload = v;
    }
    if let Some(v) = b.paused {
        s.paused = v;
    }
    s.validate()?;
    Ok(s)
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
    // Read-modify-write under the settings lock, which pause and resume
    // take too: nothing this server changes is lost in between.
    let _changing = st.settings_lock().await;
    let current = match st.call(st.store().get_queue(&queue)).await {
        Ok(s) => s,
        Err(ApiError::Store(StoreError::QueueNotFound(_) | StoreError::NotFound)) => {
            QueueSettings::default()
        }
        Err(e) => return Err(e),
    };
    let wanted = apply(current, body)?;
    let now = st.call(st.store().put_queue(&queue, wanted)).await?;
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
