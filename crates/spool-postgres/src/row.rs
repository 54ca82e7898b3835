//! A task row as stored, and the task as every view shows it.
//!
//! Stored state lags the clock in two ways, both by design: a `scheduled`
//! row whose run_at has passed is ready, and a `leased` row whose lease has
//! expired is ready again or dead (docs/spec.md §3 "Lease expiry"). [`StoredTask::view`]
//! derives the shown task from the row and the statement's clock, using the
//! rules of [`spool_core::transition`]; the sweeper writes the same result
//! down later ([`Expiry`]), so a task looks the same before and after.

use std::time::SystemTime;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use spool_core::transition::{self, after_lease_expiry, push_error, LEASE_EXPIRED};
use spool_core::{
    Dependencies, ErrorRecord, Kind, Lease, ParentFailure, Payload, PayloadFormat, QueueName,
    StoreError, Task, TaskGroup, TaskId, TaskKey, TaskState, Timestamp,
};
use tokio_postgres::types::Json;
use tokio_postgres::Row;

use crate::error::corrupt;
use crate::values::{lease_token, task_ids, timestamp};

/// One failure as the `errors` jsonb array holds it.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct ErrorJson {
    attempt: u32,
    /// Unix milliseconds.
    at: i64,
    message: String,
}

/// The `errors` column value for a history.
pub(crate) fn errors_json(errors: &[ErrorRecord]) -> Json<Vec<ErrorJson>> {
    Json(
        errors
            .iter()
            .map(|e| ErrorJson {
                attempt: e.attempt,
                at: e.at.as_millis(),
                message: e.message.clone(),
            })
            .collect(),
    )
}

fn errors_from(json: Json<Vec<ErrorJson>>) -> Vec<ErrorRecord> {
    json.0
        .into_iter()
        .map(|e| ErrorRecord {
            attempt: e.attempt,
            at: Timestamp(e.at),
            message: e.message,
        })
        .collect()
}

/// Reads an `errors` column.
pub(crate) fn read_errors(row: &Row, column: &str) -> Result<Vec<ErrorRecord>, StoreError> {
    let json: Json<Vec<ErrorJson>> = row.try_get(column).map_err(corrupt)?;
    Ok(errors_from(json))
}

/// The `state` column.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stored {
    Ready,
    Scheduled,
    Leased,
    Dead,
    Pending,
}

impl Stored {
    fn parse(s: &str) -> Result<Stored, StoreError> {
        Ok(match s {
            "ready" => Stored::Ready,
            "scheduled" => Stored::Scheduled,
            "leased" => Stored::Leased,
            "dead" => Stored::Dead,
            "pending" => Stored::Pending,
            other => return Err(corrupt(format!("state {other:?}"))),
        })
    }
}

/// The dependencies a row records (`after_ids` and the columns beside it),
/// or `None` for a task that named no parents. What the row does not hold,
/// the parents a pending task still waits for and its parents' results
/// (migration 13), is left empty here and read by
/// [`crate::deps::read`].
fn read_deps(row: &Row) -> Result<Option<Dependencies>, StoreError> {
    let Some(after) = get::<Option<Vec<i64>>>(row, "after_ids")? else {
        return Ok(None);
    };
    let after = task_ids(after)?;
    let policy: Option<String> = get(row, "if_parent_fails")?;
    Ok(Some(Dependencies {
        after,
        waiting_on: Vec::new(),
        failed: count(
            get::<Option<i32>>(row, "parents_failed")?.unwrap_or(0),
            "parents_failed",
        )?,
        if_parent_fails: policy
            .as_deref()
            .unwrap_or("cancel")
            .parse::<ParentFailure>()
            .map_err(corrupt)?,
        results: Vec::new(),
    }))
}

/// What becomes of a task whose lease ran out at `at`: dead, or ready from
/// `at` on; either way with "lease expired" recorded at `at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Expiry {
    pub(crate) dead: bool,
    pub(crate) at: Timestamp,
    pub(crate) errors: Vec<ErrorRecord>,
}

impl Expiry {
    pub(crate) fn new(
        attempt: u32,
        max_attempts: u32,
        at: Timestamp,
        mut errors: Vec<ErrorRecord>,
    ) -> Expiry {
        push_error(&mut errors, attempt, at, LEASE_EXPIRED);
        let dead = matches!(
            after_lease_expiry(attempt, max_attempts, at),
            transition::Next::Dead
        );
        Expiry { dead, at, errors }
    }
}

/// A task row (the columns of `{task}` in the statements) and its queue.
#[derive(Debug)]
pub(crate) struct StoredTask {
    pub(crate) id: TaskId,
    queue: QueueName,
    kind: Kind,
    stored: Stored,
    priority: i16,
    run_at: Timestamp,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    lease_ms: Option<u64>,
    lease: Option<Lease>,
    key: Option<TaskKey>,
    payload: Payload,
    pub(crate) errors: Vec<ErrorRecord>,
    created_at: Timestamp,
    updated_at: Timestamp,
    traceparent: Option<String>,
    group: Option<TaskGroup>,
    /// What it waits for, if it named tasks in `after` (migration 11),
    /// without what [`crate::deps::read`] reads beside the row.
    pub(crate) deps: Option<Dependencies>,
    /// How many parents it still waits for (`waiting_count`, migration
    /// 13): lowered by every ending it waits for.
    pub(crate) waiting_count: Option<i32>,
    /// Whether a pending task waits for this one: ending it must resolve
    /// them (README.md, "Dependencies").
    pub(crate) has_dependents: bool,
    /// The statement's clock.
    pub(crate) now: Timestamp,
}

fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    column: &str,
) -> Result<T, StoreError> {
    row.try_get(column)
        .map_err(|e| corrupt(format!("column {column}: {e}")))
}

fn time_col(row: &Row, column: &str) -> Result<Timestamp, StoreError> {
    get::<SystemTime>(row, column).map(timestamp)
}

fn count(v: i32, column: &str) -> Result<u32, StoreError> {
    u32::try_from(v).map_err(|_| corrupt(format!("{column} = {v}")))
}

impl StoredTask {
    /// Reads a row; its queue's name is column `queue`.
    pub(crate) fn from_row(row: &Row) -> Result<StoredTask, StoreError> {
        let id: i64 = get(row, "id")?;
        let name: String = get(row, "queue")?;
        let queue = QueueName::new(name).map_err(corrupt)?;
        let kind = Kind::new(get::<String>(row, "kind")?).map_err(corrupt)?;
        let key = get::<Option<String>>(row, "key")?
            .map(TaskKey::new)
            .transpose()
            .map_err(corrupt)?;
        let lease = match (
            get::<Option<String>>(row, "lease_owner")?,
            get::<Option<i64>>(row, "lease_token")?,
            get::<Option<SystemTime>>(row, "lease_expires_at")?,
        ) {
            (Some(owner), Some(token), Some(expires_at)) => Some(Lease {
                owner,
                token: lease_token(token),
                expires_at: timestamp(expires_at),
            }),
            _ => None,
        };
        let lease_ms = get::<Option<i64>>(row, "lease_ms")?
            .map(|ms| u64::try_from(ms).map_err(|_| corrupt(format!("lease_ms = {ms}"))))
            .transpose()?;
        let format = if get::<bool>(row, "payload_json")? {
            PayloadFormat::Json
        } else {
            PayloadFormat::Binary
        };
        let payload = Payload {
            format,
            bytes: Bytes::from(get::<Vec<u8>>(row, "payload")?),
        };
        Ok(StoredTask {
            id: TaskId(u64::try_from(id).map_err(|_| corrupt(format!("id = {id}")))?),
            queue,
            kind,
            stored: Stored::parse(&get::<String>(row, "state")?)?,
            priority: get(row, "priority")?,
            run_at: time_col(row, "run_at")?,
            attempt: count(get(row, "attempt")?, "attempt")?,
            max_attempts: count(get(row, "max_attempts")?, "max_attempts")?,
            lease_ms,
            lease,
            key,
            payload,
            errors: read_errors(row, "errors")?,
            created_at: time_col(row, "created_at")?,
            updated_at: time_col(row, "updated_at")?,
            traceparent: get(row, "traceparent")?,
            group: get::<Option<String>>(row, "grp")?
                .map(TaskGroup::new)
                .transpose()
                .map_err(corrupt)?,
            deps: read_deps(row)?,
            waiting_count: get(row, "waiting_count")?,
            has_dependents: get::<Option<bool>>(row, "has_dependents")?.unwrap_or(false),
            now: time_col(row, "db_now")?,
        })
    }

    /// Whether the row is stored leased while every view shows it dead:
    /// its last lease ran out and no one wrote that down yet. Whoever
    /// writes it down ends it, and must resolve its dependents.
    pub(crate) fn died_unrecorded(&self) -> bool {
        self.stored == Stored::Leased
            && self
                .lease
                .as_ref()
                .is_some_and(|l| l.expires_at <= self.now)
            && self.attempt >= self.max_attempts
    }

    /// The task as every view shows it at the statement's clock.
    pub(crate) fn view(self) -> Result<Task, StoreError> {
        let mut task = Task {
            id: self.id,
            queue: self.queue,
            kind: self.kind,
            payload: self.payload,
            priority: self.priority,
            run_at: self.run_at,
            key: self.key,
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            lease_ms: self.lease_ms,
            state: TaskState::Dead,
            lease: None,
            errors: self.errors,
            created_at: self.created_at,
            updated_at: self.updated_at,
            traceparent: self.traceparent,
            group: self.group,
            deps: self.deps.map(Box::new),
        };
        let waiting = |run_at: Timestamp| {
            if run_at <= self.now {
                TaskState::Ready
            } else {
                TaskState::Scheduled
            }
        };
        match self.stored {
            Stored::Ready | Stored::Scheduled => task.state = waiting(task.run_at),
            Stored::Dead => task.state = TaskState::Dead,
            Stored::Pending => task.state = TaskState::Pending,
            Stored::Leased => {
                let lease = self
                    .lease
                    .ok_or_else(|| corrupt(format!("leased task {} without a lease", self.id)))?;
                if lease.expires_at > self.now {
                    task.state = TaskState::Leased;
                    task.lease = Some(lease);
                } else {
                    let errors = std::mem::take(&mut task.errors);
                    let e = Expiry::new(task.attempt, task.max_attempts, lease.expires_at, errors);
                    task.errors = e.errors;
                    task.updated_at = e.at;
                    if e.dead {
                        task.state = TaskState::Dead;
                    } else {
                        task.run_at = e.at;
                        task.state = waiting(e.at);
                    }
                }
            }
        }
        Ok(task)
    }

    /// Whether the row is leased under `token` and the lease is still valid.
    pub(crate) fn holds(&self, token: spool_core::LeaseToken) -> bool {
        self.stored == Stored::Leased
            && self
                .lease
                .as_ref()
                .is_some_and(|l| l.token == token && l.expires_at > self.now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_records_the_error_and_decides_by_attempts() {
        let at = Timestamp(5_000);
        let e = Expiry::new(1, 3, at, Vec::new());
        assert!(!e.dead);
        assert_eq!(e.errors.len(), 1);
        assert_eq!(e.errors[0].message, LEASE_EXPIRED);
        assert_eq!(e.errors[0].at, at);
        assert!(Expiry::new(3, 3, at, Vec::new()).dead);
    }

    #[test]
    fn error_history_round_trips_through_json() {
        let errors = vec![ErrorRecord {
            attempt: 2,
            at: Timestamp(-7),
            message: "é".into(),
        }];
        assert_eq!(errors_from(errors_json(&errors)), errors);
    }
}
