//! The JSON shapes of the API as the client writes and reads them, and their
//! conversion to and from `spool_core` types. Shapes the server defines in
//! `spool_core::wire` are used from there, not copied.
//!
//! Everything the server sends is validated on the way in (names, states,
//! timestamps); a server answer that does not fit is an internal error, not
//! a task with made-up fields.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use spool_core::task::RunAt;
use spool_core::{
    Dependencies, ErrorRecord, GroupStats, Kind, Lease, LeaseToken, NewTask, Parent, ParentFailure,
    Payload, PayloadFormat, QueueName, QueueStats, StoreError, Task, TaskGroup, TaskId, TaskKey,
    TaskState, Timestamp,
};

use spool_core::rfc3339;
// Defined once for client and server: the settings, counts and dependency
// shapes, and `*_ms`.
pub(crate) use spool_core::wire::{
    ms, CountsJson, DepsJson, ParentResultJson, SettingsBody, SettingsJson,
};

fn bad_answer(what: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("the server sent an invalid answer: {what}"))
}

/// A timestamp for a request; out-of-range times are the caller's mistake.
pub(crate) fn time_out(field: &str, t: Timestamp) -> Result<String, StoreError> {
    rfc3339::format(t)
        .map_err(|_| StoreError::bad_request(format!("{field} is outside the years 0000-9999")))
}

pub(crate) fn time_in(field: &str, s: &str) -> Result<Timestamp, StoreError> {
    rfc3339::parse(s).map_err(|_| bad_answer(format!("{field} {s:?} is not RFC 3339")))
}

/// The two payload fields of a request.
#[derive(Debug, Default)]
pub(crate) struct PayloadOut<'a> {
    pub payload: Option<&'a RawValue>,
    pub payload_base64: Option<String>,
}

/// JSON payloads go as themselves, bytes as base64.
pub(crate) fn payload_out(p: &Payload) -> Result<PayloadOut<'_>, StoreError> {
    match p.format {
        PayloadFormat::Json => {
            let raw: &RawValue = serde_json::from_slice(&p.bytes)
                .map_err(|e| StoreError::bad_request(format!("payload is not valid JSON: {e}")))?;
            Ok(PayloadOut {
                payload: Some(raw),
                payload_base64: None,
            })
        }
        PayloadFormat::Binary => Ok(PayloadOut {
            payload: None,
            payload_base64: Some(STANDARD.encode(&p.bytes)),
        }),
    }
}

/// One task of an enqueue request.
#[derive(Debug, Serialize)]
pub(crate) struct EnqueueItem<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    pub priority: i16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<&'a str>,
    /// The parents named by id; with `after_batch`, the order of a task's
    /// `after` is the ids first, then the positions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after_batch: Vec<u32>,
    /// Sent only when it is not the default, so a task without
    /// dependencies reads as it did before them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub if_parent_fails: Option<ParentFailure>,
}

impl<'a> EnqueueItem<'a> {
    pub(crate) fn new(t: &'a NewTask) -> Result<Self, StoreError> {
        let (run_at, delay_ms) = match t.run_at {
            RunAt::Now => (None, None),
            RunAt::At(at) => (Some(time_out("run_at", at)?), None),
            RunAt::After(d) => (None, Some(ms(d))),
        };
        let payload = payload_out(&t.payload)?;
        let (mut after, mut after_batch) = (Vec::new(), Vec::new());
        for p in &t.after {
            match *p {
                Parent::Task(id) => after.push(id.0),
                Parent::InBatch(at) => after_batch.push(at),
            }
        }
        Ok(EnqueueItem {
            kind: t.kind.as_ref().map(Kind::as_str),
            payload: payload.payload,
            payload_base64: payload.payload_base64,
            priority: t.priority,
            run_at,
            delay_ms,
            key: t.key.as_ref().map(TaskKey::as_str),
            max_attempts: t.max_attempts,
            lease_ms: t.lease_ms,
            traceparent: t.traceparent.as_deref(),
            group: t.group.as_ref().map(TaskGroup::as_str),
            after,
            after_batch,
            if_parent_fails: (t.if_parent_fails != ParentFailure::default())
                .then_some(t.if_parent_fails),
        })
    }
}

/// `{"tasks": [...]}`: always the batch form, even for one task.
#[derive(Debug, Serialize)]
pub(crate) struct EnqueueBatch<'a> {
    pub tasks: Vec<EnqueueItem<'a>>,
}

/// The body of an update.
#[derive(Debug, Serialize)]
pub(crate) struct PatchOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i16>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Enqueued {
    pub id: u64,
    pub duplicate: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct EnqueuedList {
    pub tasks: Vec<Enqueued>,
}

#[derive(Debug, Deserialize)]
struct LeaseIn {
    owner: String,
    token: Option<String>,
    expires_at: String,
}

#[derive(Debug, Deserialize)]
struct ErrorIn {
    attempt: u32,
    at: String,
    message: String,
}

/// `deserialize_with` for `payload`: a present `null` is the JSON value
/// null (a payload), not an absent field.
pub(crate) fn present_raw<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A task as the server sends it; the payload is kept as raw JSON text.
#[derive(Debug, Deserialize)]
pub(crate) struct TaskIn<'a> {
    id: u64,
    queue: String,
    kind: String,
    #[serde(default, borrow, deserialize_with = "present_raw")]
    payload: Option<&'a RawValue>,
    payload_base64: Option<String>,
    priority: i16,
    run_at: String,
    key: Option<String>,
    attempt: u32,
    max_attempts: u32,
    lease_ms: Option<u64>,
    state: String,
    lease: Option<LeaseIn>,
    errors: Vec<ErrorIn>,
    created_at: String,
    updated_at: String,
    /// Absent from the answers of servers older than trace context.
    #[serde(default)]
    traceparent: Option<String>,
    /// Absent for a task without a group, and from servers older than
    /// groups.
    #[serde(default)]
    group: Option<String>,
    /// The dependency fields, all present on a task that has dependencies
    /// and absent otherwise. Not a flattened [`DepsJson`]: flattening
    /// buffers the whole object, which a borrowed raw payload cannot go
    /// through.
    #[serde(default)]
    after: Option<Vec<u64>>,
    #[serde(default)]
    waiting_on: Option<Vec<u64>>,
    #[serde(default)]
    parents_failed: Option<u32>,
    #[serde(default)]
    parents_completed: Option<u32>,
    #[serde(default)]
    if_parent_fails: Option<ParentFailure>,
    /// Absent when no parent left a result.
    #[serde(default)]
    parent_results: Vec<ParentResultJson>,
}

impl TaskIn<'_> {
    /// The task's dependencies: none without `after`, and every field
    /// needed with it.
    fn deps(&mut self) -> Result<Option<Box<Dependencies>>, StoreError> {
        let Some(after) = self.after.take() else {
            return Ok(None);
        };
        let missing = |field: &str| bad_answer(format!("a task with after lacks {field}"));
        let json = DepsJson {
            after,
            waiting_on: self
                .waiting_on
                .take()
                .ok_or_else(|| missing("waiting_on"))?,
            parents_failed: self
                .parents_failed
                .ok_or_else(|| missing("parents_failed"))?,
            parents_completed: self
                .parents_completed
                .ok_or_else(|| missing("parents_completed"))?,
            if_parent_fails: self
                .if_parent_fails
                .ok_or_else(|| missing("if_parent_fails"))?,
            parent_results: std::mem::take(&mut self.parent_results),
        };
        Ok(Some(Box::new(
            Dependencies::try_from(json).map_err(bad_answer)?,
        )))
    }

    /// The task; `known_token` fills in the lease token the server leaves
    /// out of every answer but a claim's (the caller sent it, so knows it).
    pub(crate) fn into_task(mut self, known_token: Option<LeaseToken>) -> Result<Task, StoreError> {
        let deps = self.deps()?;
        let payload = match (self.payload, self.payload_base64) {
            (Some(raw), None) => Payload::json(raw.get().as_bytes().to_vec()),
            (None, Some(b64)) => Payload::binary(STANDARD.decode(b64).map_err(bad_answer)?),
            _ => {
                return Err(bad_answer(
                    "a task needs exactly one of payload, payload_base64",
                ))
            }
        };
        let lease = match self.lease {
            Some(l) => Some(Lease {
                owner: l.owner,
                token: match (l.token, known_token) {
                    (Some(t), _) => t.parse().map_err(bad_answer)?,
                    (None, Some(t)) => t,
                    // GET and list never show tokens; zero stands for "not shown".
                    (None, None) => LeaseToken(0),
                },
                expires_at: time_in("expires_at", &l.expires_at)?,
            }),
            None => None,
        };
        let errors = self
            .errors
            .into_iter()
            .map(|e| {
                Ok(ErrorRecord {
                    attempt: e.attempt,
                    at: time_in("at", &e.at)?,
                    message: e.message,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Task {
            id: TaskId(self.id),
            queue: QueueName::new(self.queue).map_err(bad_answer)?,
            kind: Kind::new(self.kind).map_err(bad_answer)?,
            payload,
            priority: self.priority,
            run_at: time_in("run_at", &self.run_at)?,
            key: self.key.map(TaskKey::new).transpose().map_err(bad_answer)?,
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            lease_ms: self.lease_ms,
            state: self.state.parse::<TaskState>().map_err(bad_answer)?,
            lease,
            errors,
            created_at: time_in("created_at", &self.created_at)?,
            updated_at: time_in("updated_at", &self.updated_at)?,
            traceparent: self.traceparent,
            group: self
                .group
                .map(TaskGroup::new)
                .transpose()
                .map_err(bad_answer)?,
            deps,
        })
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct TasksIn<'a> {
    #[serde(borrow)]
    pub tasks: Vec<TaskIn<'a>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PageIn<'a> {
    #[serde(borrow)]
    pub tasks: Vec<TaskIn<'a>>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct QueueIn {
    name: String,
    paused: bool,
    counts: CountsJson,
    kinds: BTreeMap<String, CountsJson>,
    oldest_ready_age_ms: Option<u64>,
    /// Absent from servers that predate it.
    #[serde(default)]
    rate_tokens: Option<u32>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct QueuesIn {
    pub queues: Vec<QueueIn>,
}

impl QueueIn {
    pub(crate) fn into_stats(self) -> Result<QueueStats, StoreError> {
        let kinds = self
            .kinds
            .into_iter()
            .map(|(k, c)| Ok((Kind::new(k).map_err(bad_answer)?, c.into())))
            .collect::<Result<_, StoreError>>()?;
        Ok(QueueStats {
            name: QueueName::new(self.name).map_err(bad_answer)?,
            paused: self.paused,
            counts: self.counts.into(),
            kinds,
            oldest_ready_age: self.oldest_ready_age_ms.map(Duration::from_millis),
            rate_tokens: self.rate_tokens,
        })
    }
}

/// One group of `GET /v1/queues/{queue}/groups`.
#[derive(Debug, Deserialize)]
struct GroupIn {
    group: String,
    waiting: u64,
    leased: u64,
    /// Absent from servers that predate it.
    #[serde(default)]
    rate_tokens: Option<u32>,
}

/// `{"groups": [...]}`, busiest first.
#[derive(Debug, Deserialize)]
pub(crate) struct GroupsIn {
    groups: Vec<GroupIn>,
}

impl GroupsIn {
    pub(crate) fn into_stats(self) -> Result<Vec<GroupStats>, StoreError> {
        self.groups
            .into_iter()
            .map(|g| {
                Ok(GroupStats {
                    group: TaskGroup::new(g.group).map_err(bad_answer)?,
                    waiting: g.waiting,
                    leased: g.leased,
                    rate_tokens: g.rate_tokens,
                })
            })
            .collect()
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct AckResultIn {
    pub status: u16,
    pub error: Option<crate::http::ErrorDetail>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct AckResultsIn {
    pub results: Vec<AckResultIn>,
}

/// The answer of `POST /v1/leases/wait`.
#[derive(Debug, Deserialize)]
pub(crate) struct LostIn {
    pub lost: Vec<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RetriedIn {
    pub retried: u64,
}

#[derive(Debug, Deserialize)]
pub(crate) struct TimeIn {
    pub now: String,
}

impl TimeIn {
    pub(crate) fn into_timestamp(self) -> Result<Timestamp, StoreError> {
        time_in("now", &self.now)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A task answer with `extra` fields added to the ones every server
    /// sends.
    fn task_json(extra: &str) -> String {
        format!(
            r#"{{"id":7,"queue":"q","kind":"q","payload":null,"priority":0,
                "run_at":"2026-11-21T23:59:00.123Z","key":null,"attempt":0,
                "max_attempts":20,"lease_ms":null,"state":"ready","lease":null,
                "errors":[],"created_at":"2026-11-21T23:59:00.123Z",
                "updated_at":"2026-11-21T23:59:00.123Z"{extra}}}"#
        )
    }

    fn task(json: &str) -> Result<Task, StoreError> {
        serde_json::from_str::<TaskIn<'_>>(json)
            .unwrap()
            .into_task(None)
    }

    #[test]
    fn a_tasks_group_is_read_and_absent_means_none() {
        let t = task(&task_json(r#","group":"customer 42 ü""#)).unwrap();
        assert_eq!(t.group.unwrap().as_str(), "customer 42 ü");
        assert_eq!(task(&task_json("")).unwrap().group, None);
        assert_eq!(task(&task_json(r#","group":null"#)).unwrap().group, None);
        assert!(matches!(
            task(&task_json(r#","group":"""#)),
            Err(StoreError::Internal(_))
        ));
    }

    #[test]
    fn an_enqueue_item_sends_its_group_only_when_it_has_one() {
        let grouped = NewTask::default().group(TaskGroup::new("acme").unwrap());
        let json = serde_json::to_value(EnqueueItem::new(&grouped).unwrap()).unwrap();
        assert_eq!(json["group"], "acme");
        let plain = serde_json::to_value(EnqueueItem::new(&NewTask::default()).unwrap()).unwrap();
        assert!(plain.get("group").is_none(), "{plain}");
    }

    #[test]
    fn a_tasks_dependencies_are_read_only_when_whole() {
        let deps = r#","after":[5,3],"waiting_on":[5],"parents_failed":0,
                      "parents_completed":1,"if_parent_fails":"run""#;
        let d = task(&task_json(deps)).unwrap().deps.unwrap();
        assert_eq!(
            (d.after, d.waiting_on),
            (vec![TaskId(5), TaskId(3)], vec![TaskId(5)])
        );
        assert_eq!((d.failed, d.if_parent_fails), (0, ParentFailure::Run));
        assert_eq!(task(&task_json("")).unwrap().deps, None);
        assert!(task(&task_json(r#","after":[5]"#)).is_err());
        let wrong = r#","after":[5],"waiting_on":[],"parents_failed":0,
                       "parents_completed":7,"if_parent_fails":"run""#;
        assert!(matches!(
            task(&task_json(wrong)),
            Err(StoreError::Internal(_))
        ));
    }

    #[test]
    fn an_enqueue_item_sends_parents_by_id_and_by_position() {
        let t = NewTask::default()
            .after(Parent::InBatch(0))
            .after(Parent::Task(TaskId(9)))
            .if_parent_fails(ParentFailure::Run);
        let json = serde_json::to_value(EnqueueItem::new(&t).unwrap()).unwrap();
        assert_eq!(json["after"], serde_json::json!([9]));
        assert_eq!(json["after_batch"], serde_json::json!([0]));
        assert_eq!(json["if_parent_fails"], "run");
        let plain = serde_json::to_value(EnqueueItem::new(&NewTask::default()).unwrap()).unwrap();
        for field in ["after", "after_batch", "if_parent_fails"] {
            assert!(plain.get(field).is_none(), "{plain}");
        }
    }

    #[test]
    fn groups_are_read_in_the_order_sent() {
        let answer = r#"{"groups":[{"group":"b","waiting":3,"leased":1},
                                   {"group":"a","waiting":0,"leased":2}]}"#;
        let groups = serde_json::from_str::<GroupsIn>(answer)
            .unwrap()
            .into_stats()
            .unwrap();
        let seen: Vec<_> = groups
            .iter()
            .map(|g| (g.group.as_str(), g.waiting, g.leased))
            .collect();
        assert_eq!(seen, [("b", 3, 1), ("a", 0, 2)]);
        let bad = r#"{"groups":[{"group":"..","waiting":0,"leased":0}]}"#;
        assert!(serde_json::from_str::<GroupsIn>(bad)
            .unwrap()
            .into_stats()
            .is_err());
    }

    #[test]
    fn settings_carry_group_concurrency() {
        let json = r#"{"lease_ms":30000,"max_attempts":20,"backoff_base_ms":1000,
                       "backoff_max_ms":3600000,"dedup_window_ms":900000,
                       "max_payload":1048576,"paused":false,"group_concurrency":4}"#;
        let s: spool_core::QueueSettings =
            serde_json::from_str::<SettingsJson>(json).unwrap().into();
        assert_eq!(s.group_concurrency, Some(4));
        let change = spool_core::QueueChange {
            group_concurrency: Some(None),
            ..Default::default()
        };
        let body = serde_json::to_value(SettingsBody::from(change)).unwrap();
        assert_eq!(body, serde_json::json!({"group_concurrency": null}));
    }
}
