//! A task as JSON (docs/spec.md §7.1): every field of §2, timestamps in RFC 3339,
//! the lease token only in claim answers, and the dependency fields only on
//! a task that has dependencies.

use serde::Serialize;
use serde_json::value::RawValue;
use spool_core::wire::{DepsJson, ParentResultJson};
use spool_core::{ParentFailure, Task, TaskState};
use utoipa::ToSchema;

use super::payload::payload_out;
use crate::rfc3339::{self, TimeError};

/// A task's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateName {
    Scheduled,
    Ready,
    Leased,
    Dead,
    Pending,
}

impl From<TaskState> for StateName {
    fn from(s: TaskState) -> Self {
        match s {
            TaskState::Scheduled => StateName::Scheduled,
            TaskState::Ready => StateName::Ready,
            TaskState::Leased => StateName::Leased,
            TaskState::Dead => StateName::Dead,
            TaskState::Pending => StateName::Pending,
        }
    }
}

impl From<StateName> for TaskState {
    fn from(s: StateName) -> Self {
        match s {
            StateName::Scheduled => TaskState::Scheduled,
            StateName::Ready => TaskState::Ready,
            StateName::Leased => TaskState::Leased,
            StateName::Dead => TaskState::Dead,
            StateName::Pending => TaskState::Pending,
        }
    }
}

/// A task. Exactly one of `payload` and `payload_base64` is present.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TaskJson {
    pub id: u64,
    pub queue: String,
    pub kind: String,
    /// The payload, when it was given as JSON: the same value, byte for byte.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub payload: Option<Box<RawValue>>,
    /// The payload, when it was given as bytes (standard base64, padded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    pub priority: i16,
    /// RFC 3339, UTC, milliseconds.
    #[schema(format = DateTime, example = "2026-11-21T23:59:00.123Z")]
    pub run_at: String,
    pub key: Option<String>,
    pub attempt: u32,
    pub max_attempts: u32,
    pub lease_ms: Option<u64>,
    pub state: StateName,
    pub lease: Option<LeaseJson>,
    pub errors: Vec<ErrorJson>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The W3C trace context given at enqueue, which its runs join.
    pub traceparent: Option<String>,
    /// The task's group in its queue; absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    // The dependency fields (docs/spec.md §3.2), all present on a task
    // enqueued with `after` and all absent otherwise, so most tasks' JSON
    // stays as it was. Spelled out rather than a flattened `DepsJson`: the
    // schema of an optional flattened object would require its fields on
    // every task.
    /// The ids named at enqueue, each once, in the order named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<u64>>,
    /// Those that have not ended yet, ascending: the task is `pending`
    /// while any is left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<Vec<u64>>,
    /// How many ended dead or cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parents_failed: Option<u32>,
    /// How many ended completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parents_completed: Option<u32>,
    /// What a parent ending dead or cancelled does to the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<ParentFailure>)]
    pub if_parent_fails: Option<ParentFailure>,
    /// The results its parents left when they completed, by parent id
    /// ascending; absent when none did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parent_results: Vec<ParentResultJson>,
}

/// The lease of a leased task.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LeaseJson {
    pub owner: String,
    /// Only in claim answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

/// One recorded failure.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorJson {
    pub attempt: u32,
    #[schema(format = DateTime)]
    pub at: String,
    pub message: String,
}

/// `{"tasks": [...]}`: a claim's answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TasksJson {
    pub tasks: Vec<TaskJson>,
}

/// The JSON of `task`; `with_token` only for the claimer.
pub(crate) fn task_json(task: &Task, with_token: bool) -> Result<TaskJson, TimeError> {
    let (payload, payload_base64) = payload_out(&task.payload);
    let lease = match &task.lease {
        Some(l) => Some(LeaseJson {
            owner: l.owner.clone(),
            token: with_token.then(|| l.token.to_string()),
            expires_at: rfc3339::format(l.expires_at)?,
        }),
        None => None,
    };
    let deps = task.deps.as_deref().map(DepsJson::from);
    let errors = task
        .errors
        .iter()
        .map(|e| {
            Ok(ErrorJson {
                attempt: e.attempt,
                at: rfc3339::format(e.at)?,
                message: e.message.clone(),
            })
        })
        .collect::<Result<_, TimeError>>()?;
    Ok(TaskJson {
        id: task.id.0,
        queue: task.queue.to_string(),
        kind: task.kind.to_string(),
        payload,
        payload_base64,
        priority: task.priority,
        run_at: rfc3339::format(task.run_at)?,
        key: task.key.as_ref().map(|k| k.to_string()),
        attempt: task.attempt,
        max_attempts: task.max_attempts,
        lease_ms: task.lease_ms,
        state: task.state.into(),
        lease,
        errors,
        created_at: rfc3339::format(task.created_at)?,
        updated_at: rfc3339::format(task.updated_at)?,
        traceparent: task.traceparent.clone(),
        group: task.group.as_ref().map(|g| g.to_string()),
        after: deps.as_ref().map(|d| d.after.clone()),
        waiting_on: deps.as_ref().map(|d| d.waiting_on.clone()),
        parents_failed: deps.as_ref().map(|d| d.parents_failed),
        parents_completed: deps.as_ref().map(|d| d.parents_completed),
        if_parent_fails: deps.as_ref().map(|d| d.if_parent_fails),
        parent_results: deps.map(|d| d.parent_results).unwrap_or_default(),
    })
}
