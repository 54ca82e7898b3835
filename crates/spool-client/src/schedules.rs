//! Schedules over HTTP: the JSON shapes of `/v1/schedules` and the calls
//! behind `RemoteStore`'s four schedule methods, so that a process that
//! only reaches a server can run a scheduler (`fire` is the tick guard).

use std::time::Duration;

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use spool_core::{
    Cadence, EnqueueOutcome, Kind, Payload, QueueName, Schedule, ScheduleSpec, StoreError, TaskId,
    Timestamp,
};

use crate::http::{self, segment, Target};
use crate::remote::RemoteStore;
use crate::wire::{self, PayloadOut};

fn bad_answer(what: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("the server sent an invalid schedule: {what}"))
}

fn path(name: &Kind, action: &str) -> String {
    format!("/v1/schedules/{}{action}", segment(name.as_str()))
}

/// The body of `PUT /v1/schedules/{name}`.
#[derive(Debug, Serialize)]
struct ScheduleOut<'a> {
    queue: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    every_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cron: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tz: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deadline_ms: Option<u64>,
}

impl<'a> ScheduleOut<'a> {
    fn new(spec: &'a ScheduleSpec) -> Result<Self, StoreError> {
        let PayloadOut {
            payload,
            payload_base64,
        } = wire::payload_out(&spec.payload)?;
        let (every_ms, cron, tz) = match &spec.cadence {
            Cadence::Every(d) => (Some(wire::ms(*d)), None, None),
            Cadence::Cron { expr, tz } => (None, Some(expr.as_str()), tz.as_deref()),
        };
        Ok(ScheduleOut {
            queue: spec.queue.as_str(),
            kind: spec.kind.as_ref().map(Kind::as_str),
            payload,
            payload_base64,
            every_ms,
            cron,
            tz,
            deadline_ms: spec.deadline.map(wire::ms),
        })
    }
}

/// A schedule as the server sends it.
#[derive(Debug, Deserialize)]
struct ScheduleIn<'a> {
    name: String,
    queue: String,
    kind: Option<String>,
    #[serde(default, borrow, deserialize_with = "wire::present_raw")]
    payload: Option<&'a RawValue>,
    payload_base64: Option<String>,
    every_ms: Option<u64>,
    cron: Option<String>,
    tz: Option<String>,
    deadline_ms: Option<u64>,
    last_fire_at: Option<String>,
    created_at: String,
}

impl ScheduleIn<'_> {
    fn into_schedule(self) -> Result<Schedule, StoreError> {
        use base64::Engine as _;
        let payload = match (self.payload, self.payload_base64) {
            (Some(raw), None) => Payload::json(raw.get().as_bytes().to_vec()),
            (None, Some(b64)) => Payload::binary(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(bad_answer)?,
            ),
            _ => return Err(bad_answer("needs exactly one of payload, payload_base64")),
        };
        let cadence = match (self.every_ms, self.cron) {
            (Some(ms), None) => Cadence::Every(Duration::from_millis(ms)),
            (None, Some(expr)) => Cadence::Cron { expr, tz: self.tz },
            _ => return Err(bad_answer("needs exactly one of every_ms, cron")),
        };
        let queue = QueueName::new(self.queue).map_err(bad_answer)?;
        Ok(Schedule {
            spec: ScheduleSpec {
                name: Kind::new(self.name).map_err(bad_answer)?,
                kind: self.kind.map(Kind::new).transpose().map_err(bad_answer)?,
                queue,
                payload,
                cadence,
                deadline: self.deadline_ms.map(Duration::from_millis),
            },
            last_fire_at: self
                .last_fire_at
                .map(|s| wire::time_in("last_fire_at", &s))
                .transpose()?,
            created_at: wire::time_in("created_at", &self.created_at)?,
        })
    }
}

#[derive(Debug, Deserialize)]
struct SchedulesIn<'a> {
    #[serde(borrow)]
    schedules: Vec<ScheduleIn<'a>>,
}

#[derive(Debug, Deserialize)]
struct FiredIn {
    fired: bool,
    id: Option<u64>,
    #[serde(default)]
    duplicate: bool,
}

impl RemoteStore {
    pub(crate) async fn put_schedule_http(
        &self,
        spec: ScheduleSpec,
    ) -> Result<Schedule, StoreError> {
        spec.validate()?;
        let req = self
            .http
            .request(Method::PUT, &path(&spec.name, ""), Duration::ZERO)
            .json(&ScheduleOut::new(&spec)?);
        let bytes = self.http.send(req, Target::Task).await?;
        http::parse::<ScheduleIn<'_>>(&bytes)?.into_schedule()
    }

    pub(crate) async fn list_schedules_http(&self) -> Result<Vec<Schedule>, StoreError> {
        let req = self
            .http
            .request(Method::GET, "/v1/schedules", Duration::ZERO);
        let bytes = self.http.send(req, Target::Task).await?;
        http::parse::<SchedulesIn<'_>>(&bytes)?
            .schedules
            .into_iter()
            .map(ScheduleIn::into_schedule)
            .collect()
    }

    pub(crate) async fn delete_schedule_http(&self, name: &Kind) -> Result<(), StoreError> {
        let req = self
            .http
            .request(Method::DELETE, &path(name, ""), Duration::ZERO);
        self.http.send(req, Target::Task).await.map(drop)
    }

    pub(crate) async fn fire_schedule_http(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        let body = serde_json::json!({ "tick": wire::time_out("tick", tick)? });
        let req = self
            .http
            .request(Method::POST, &path(name, "/fire"), Duration::ZERO)
            .json(&body);
        let bytes = self.http.send(req, Target::Task).await?;
        let answer: FiredIn = http::parse(&bytes)?;
        match (answer.fired, answer.id) {
            (false, _) => Ok(None),
            (true, Some(id)) => Ok(Some(EnqueueOutcome {
                id: TaskId(id),
                duplicate: answer.duplicate,
            })),
            (true, None) => Err(bad_answer("a fired tick without its task id")),
        }
    }
}
