//! Periodic schedules (docs/spec.md §5, §7.1): `PUT /v1/schedules/{name}` creates or
//! replaces one, `GET /v1/schedules` lists them with their last and next
//! fire times, `DELETE` removes one, and `POST /v1/schedules/{name}/fire`
//! fires one tick (an addition to docs/spec.md §7, so a scheduler in another
//! process can drive the store through this server).
//!
//! A schedule's body is checked whole before the store is asked: the
//! cadence (`every_ms` ≥ 100, or a cron expression — 5 fields, 6 with
//! seconds first, or a macro such as `@daily` — with an optional time zone),
//! the payload (exactly as for enqueue) and the deadline.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use spool_core::wire::ms;
use spool_core::{Cadence, Kind, Payload, QueueName, Schedule, ScheduleSpec, StoreError};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::{ApiJson, ApiPath};
use crate::rfc3339;
use crate::state::AppState;
use crate::wire::{self, PayloadIn};

/// A schedule. Exactly one of `payload` and `payload_base64`, and one of
/// `every_ms` and `cron`, is present.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ScheduleJson {
    pub name: String,
    pub queue: String,
    /// The kind of each tick's task; null means the queue's name.
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub payload: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// The cron expression's time zone (IANA); absent means UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
    /// Each tick's run is cut off after this long; null means the period.
    pub deadline_ms: Option<u64>,
    /// The latest tick fired.
    #[schema(format = DateTime)]
    pub last_fire_at: Option<String>,
    /// The next tick to fire (in the past while no scheduler runs).
    #[schema(format = DateTime)]
    pub next_fire_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// `{"schedules": [...]}`, by name.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct SchedulesJson {
    pub schedules: Vec<ScheduleJson>,
}

/// A schedule to create or replace. Replacing keeps its firing state.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ScheduleBody {
    /// Optional: when given, must be the name in the path.
    name: Option<String>,
    #[schema(value_type = String)]
    queue: QueueName,
    /// Defaults to the queue's name.
    #[schema(value_type = Option<String>)]
    kind: Option<Kind>,
    /// Any JSON value, kept exactly; without a payload, JSON `null`.
    #[serde(default, deserialize_with = "present_owned")]
    #[schema(value_type = Option<Value>)]
    payload: Option<Box<RawValue>>,
    /// Bytes, standard base64 with padding.
    payload_base64: Option<String>,
    /// The period; ticks are the multiples of it since the Unix epoch.
    #[schema(minimum = 100)]
    every_ms: Option<u64>,
    /// A cron expression: 5 fields (`0 9 * * *`), 6 with seconds first, or a
    /// macro (`@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`).
    cron: Option<String>,
    /// The cron expression's time zone (IANA name); only with `cron`.
    tz: Option<String>,
    /// How long each tick's run may take; defaults to the period.
    #[schema(minimum = 1)]
    deadline_ms: Option<u64>,
}

/// `{"tick": timestamp}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FireBody {
    /// The tick to fire (RFC 3339): a tick of the schedule, not in the
    /// future.
    #[schema(format = DateTime)]
    pub tick: String,
}

/// Whether this call fired the tick.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct FireJson {
    /// False when the tick (or a later one) was already fired.
    pub fired: bool,
    /// The tick's task, when fired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// True when the tick's key matched an existing task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<bool>,
}

/// A present `payload: null` is the JSON value null, not an absent field.
fn present_owned<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

fn spec_from(name: Kind, b: ScheduleBody) -> Result<ScheduleSpec, StoreError> {
    if b.name.as_deref().is_some_and(|n| n != name.as_str()) {
        return Err(StoreError::bad_request(
            "name must be the schedule name in the path",
        ));
    }
    let cadence = match (b.every_ms, b.cron, b.tz) {
        (Some(_), Some(_), _) => {
            return Err(StoreError::bad_request(
                "every_ms and cron are exclusive: give one",
            ))
        }
        (Some(_), None, Some(_)) => return Err(StoreError::bad_request("tz applies to cron only")),
        (Some(ms), None, None) => Cadence::Every(wire::duration_ms("every_ms", ms)?),
        (None, Some(expr), tz) => Cadence::Cron { expr, tz },
        (None, None, _) => return Err(StoreError::bad_request("give every_ms or cron")),
    };
    let payload = wire::payload_in(PayloadIn {
        json: b.payload.as_deref(),
        base64: b.payload_base64,
    })?
    .unwrap_or_else(|| Payload::json(&b"null"[..]));
    let deadline = match b.deadline_ms {
        Some(ms) => Some(wire::non_zero_ms("deadline_ms", ms)?),
        None => None,
    };
    let spec = ScheduleSpec {
        name,
        queue: b.queue,
        kind: b.kind,
        payload,
        cadence,
        deadline,
    };
    spec.validate()?;
    Ok(spec)
}

fn time(t: Option<spool_core::Timestamp>) -> Result<Option<String>, ApiError> {
    Ok(t.map(rfc3339::format).transpose()?)
}

fn schedule_json(s: &Schedule) -> Result<ScheduleJson, ApiError> {
    let spec = &s.spec;
    let (payload, payload_base64) = wire::payload_out(&spec.payload);
    let (every_ms, cron, tz) = match &spec.cadence {
        Cadence::Every(d) => (Some(ms(*d)), None, None),
        Cadence::Cron { expr, tz } => (None, Some(expr.clone()), tz.clone()),
    };
    Ok(ScheduleJson {
        name: spec.name.to_string(),
        queue: spec.queue.to_string(),
        kind: spec.kind.as_ref().map(Kind::to_string),
        payload,
        payload_base64,
        every_ms,
        cron,
        tz,
        deadline_ms: spec.deadline.map(ms),
        last_fire_at: time(s.last_fire_at)?,
        next_fire_at: time(s.next_fire_at())?,
        created_at: rfc3339::format(s.created_at)?,
    })
}

/// Create or replace a schedule.
#[utoipa::path(
    put,
    path = "/v1/schedules/{name}",
    tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    request_body = ScheduleBody,
    responses((status = 200, description = "The schedule now in force", body = ScheduleJson))
)]
pub(super) async fn put_schedule(
    State(st): State<AppState>,
    ApiPath(name): ApiPath<Kind>,
    ApiJson(body): ApiJson<ScheduleBody>,
) -> Result<Json<ScheduleJson>, ApiError> {
    let spec = spec_from(name, body)?;
    let schedule = st.call(st.store().put_schedule(spec)).await?;
    Ok(Json(schedule_json(&schedule)?))
}

/// Every schedule, with its last and next fire time.
#[utoipa::path(
    get,
    path = "/v1/schedules",
    tag = "schedules",
    responses((status = 200, description = "Every schedule, by name", body = SchedulesJson))
)]
pub(super) async fn list_schedules(
    State(st): State<AppState>,
) -> Result<Json<SchedulesJson>, ApiError> {
    let list = st.call(st.store().list_schedules()).await?;
    let schedules = list.iter().map(schedule_json).collect::<Result<_, _>>()?;
    Ok(Json(SchedulesJson { schedules }))
}

/// Delete a schedule; the tasks it already enqueued stay.
#[utoipa::path(
    delete,
    path = "/v1/schedules/{name}",
    tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 204, description = "Deleted"))
)]
pub(super) async fn delete_schedule(
    State(st): State<AppState>,
    ApiPath(name): ApiPath<Kind>,
) -> Result<StatusCode, ApiError> {
    st.call(st.store().delete_schedule(&name)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Fire one tick of a schedule, unless it (or a later tick) was fired
/// already: any number of schedulers make one task per tick.
#[utoipa::path(
    post,
    path = "/v1/schedules/{name}/fire",
    tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    request_body = FireBody,
    responses((status = 200, description = "Whether this call fired the tick", body = FireJson))
)]
pub(super) async fn fire_schedule(
    State(st): State<AppState>,
    ApiPath(name): ApiPath<Kind>,
    ApiJson(body): ApiJson<FireBody>,
) -> Result<Json<FireJson>, ApiError> {
    let tick = wire::timestamp("tick", &body.tick)?;
    let fired = st.call(st.store().fire_schedule(&name, tick)).await?;
    Ok(Json(FireJson {
        fired: fired.is_some(),
        id: fired.map(|o| o.id.0),
        duplicate: fired.map(|o| o.duplicate),
    }))
}
