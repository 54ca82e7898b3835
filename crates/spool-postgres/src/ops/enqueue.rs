//! Enqueue: a batch in one statement or two, atomic without a transaction
//! of its own, so it can also run inside the caller's (transactional
//! enqueue).
//!
//! A batch in which no task has a key, to a queue that exists, is one
//! statement (`enqueue_keyless`): queue settings, ids, the payload check
//! and the insert, one round trip; a single such task outside a caller's
//! transaction, a plain INSERT ... SELECT (`enqueue_one`), cheaper still to
//! run. Otherwise:
//!
//! 1. `enqueue_prepare`: the queue's settings and fresh ids from the
//!    sequence (the queue is created first if it is new and queues are not
//!    strict). Everything that can be refused is checked now, before any
//!    write: batch size, payload sizes, attempts, leases, times.
//! 2. `enqueue_insert`: claims the keys and inserts the tasks whose key was
//!    not taken, in one statement; inside a caller's transaction it also
//!    notifies waiters, so a rollback wakes no one. The store's own
//!    enqueues notify after commit instead, coalesced ([`crate::notifier`]).
//!
//! Keys used twice within a batch are resolved here: the second use is a
//! duplicate of the first and never reaches the database.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use spool_core::store::MAX_BATCH;
use spool_core::task::RunAt;
use spool_core::{
    EnqueueOutcome, NewTask, PayloadFormat, QueueName, QueueSettings, StoreError, TaskId, TaskKey,
};

use crate::db::Db;
use crate::error::{corrupt, db};
use crate::ops::queues::settings_params;
use crate::sql::Sql;
use crate::store::Shared;
use crate::values::{millis, time};

impl Shared {
    pub(crate) async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        let client = self.client().await?;
        let out = enqueue_on(
            &client,
            &self.sql,
            self.config.strict_queues,
            queue,
            tasks,
            NotifyIn::Later,
        )
        .await?;
        if out.iter().any(|o| !o.duplicate) {
            self.notify(queue.as_str());
        }
        Ok(out)
    }
}

/// Who tells waiting claimers about the new tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotifyIn {
    /// The enqueue statement itself: for a caller's transaction, whose
    /// commit we never see.
    Statement,
    /// The caller, once the enqueue has committed ([`Shared::notify`]).
    Later,
}

/// Where each task of the batch goes.
enum Slot<'a> {
    /// Inserted (unless its key is taken), as the n-th new row.
    New(usize, Option<&'a TaskKey>),
    /// A later use of a key already used at this index of the batch.
    SameKeyAs(usize),
}

/// What a batch is checked against and filled in from: the queue's
/// settings, or `None` where the statement applies them itself.
struct Limits {
    max_attempts: Option<i32>,
    max_payload: Option<i64>,
}

/// The queue's id, its limits and fresh ids.
struct Target {
    queue_id: i32,
    limits: Limits,
    ids: Vec<i64>,
}

/// Enqueues `tasks` through `db`, atomically.
pub(crate) async fn enqueue_on(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    strict: bool,
    queue: &QueueName,
    tasks: Vec<NewTask>,
    notify: NotifyIn,
) -> Result<Vec<EnqueueOutcome>, StoreError> {
    if tasks.is_empty() {
        return Err(StoreError::bad_request("a batch needs at least one task"));
    }
    if tasks.len() > MAX_BATCH {
        return Err(StoreError::bad_request(format!(
            "a batch holds at most {MAX_BATCH} tasks"
        )));
    }
    let mut first_use: HashMap<&TaskKey, usize> = HashMap::new();
    let mut slots = Vec::with_capacity(tasks.len());
    let mut new_rows = 0;
    for (i, t) in tasks.iter().enumerate() {
        match t.key.as_ref().map(|k| (k, first_use.get(k))) {
            Some((_, Some(&first))) => slots.push(Slot::SameKeyAs(first)),
            key => {
                if let Some((k, None)) = key {
                    first_use.insert(k, i);
                }
                slots.push(Slot::New(new_rows, t.key.as_ref()));
                new_rows += 1;
            }
        }
    }

    if first_use.is_empty() && notify == NotifyIn::Later {
        if let [task] = tasks.as_slice() {
            if let Some(out) = enqueue_one(db_, sql, queue, task, &slots).await? {
                return Ok(vec![out]);
            }
        }
    }
    if first_use.is_empty() {
        if let Some(out) = enqueue_keyless(db_, sql, queue, &tasks, &slots, notify).await? {
            return Ok(out);
        }
        // No such queue: the general path creates it (or refuses).
    }
    let target = prepare(db_, sql, strict, queue, &tasks, &slots).await?;
    let rows = Rows::build(&tasks, &slots, &target.limits, queue.as_str())?;
    let queue_name = queue.as_str();
    let notify_here = notify == NotifyIn::Statement;
    let answer = db_
        .query(
            &sql.enqueue_insert,
            &[
                &target.queue_id,
                &queue_name,
                &target.ids,
                &rows.kind,
                &rows.priority,
                &rows.run_at,
                &rows.delay_ms,
                &rows.key,
                &rows.max_attempts,
                &rows.lease_ms,
                &rows.payload_json,
                &rows.payload,
                &notify_here,
            ],
        )
        .await
        .map_err(db)?;
    let mut owner: HashMap<String, i64> = HashMap::new();
    for row in &answer {
        let key: Option<String> = row.try_get(0).map_err(corrupt)?;
        if let Some(key) = key {
            owner.insert(key, row.try_get(1).map_err(corrupt)?);
        }
    }

    let mut out: Vec<EnqueueOutcome> = Vec::with_capacity(tasks.len());
    for slot in &slots {
        let outcome = match *slot {
            Slot::SameKeyAs(first) => EnqueueOutcome {
                id: out
                    .get(first)
                    .map(|o| o.id)
                    .ok_or_else(|| corrupt("a key's first use has no outcome"))?,
                duplicate: true,
            },
            Slot::New(n, key) => {
                let id = *target
                    .ids
                    .get(n)
                    .ok_or_else(|| corrupt("fewer ids than new tasks"))?;
                let holder = match key {
                    Some(k) => *owner
                        .get(k.as_str())
                        .ok_or_else(|| corrupt(format!("key {k} was not answered")))?,
                    None => id,
                };
                EnqueueOutcome {
                    id: TaskId(u64::try_from(holder).map_err(corrupt)?),
                    duplicate: holder != id,
                }
            }
        };
        out.push(outcome);
    }
    Ok(out)
}

/// One task without a key, as a plain INSERT; `None` (and nothing written)
/// if the queue does not exist or refuses the payload: the batch statement
/// then tells which.
async fn enqueue_one(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    queue: &QueueName,
    task: &NewTask,
    slots: &[Slot<'_>],
) -> Result<Option<EnqueueOutcome>, StoreError> {
    let in_statement = Limits {
        max_attempts: None,
        max_payload: None,
    };
    let rows = Rows::build(
        std::slice::from_ref(task),
        slots,
        &in_statement,
        queue.as_str(),
    )?;
    let answer = db_
        .query(
            &sql.enqueue_one,
            &[
                &queue.as_str(),
                &rows.kind[0],
                &rows.priority[0],
                &rows.run_at[0],
                &rows.delay_ms[0],
                &rows.max_attempts[0],
                &rows.lease_ms[0],
                &rows.payload_json[0],
                &rows.payload[0],
            ],
        )
        .await
        .map_err(db)?;
    answer
        .first()
        .map(|row| {
            let id: i64 = row.try_get(0).map_err(corrupt)?;
            Ok(EnqueueOutcome {
                id: TaskId(u64::try_from(id).map_err(corrupt)?),
                duplicate: false,
            })
        })
        .transpose()
}

/// A batch without keys in one statement; `None` (and nothing written) if
/// the queue does not exist.
async fn enqueue_keyless(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    queue: &QueueName,
    tasks: &[NewTask],
    slots: &[Slot<'_>],
    notify: NotifyIn,
) -> Result<Option<Vec<EnqueueOutcome>>, StoreError> {
    let in_statement = Limits {
        max_attempts: None,
        max_payload: None,
    };
    let rows = Rows::build(tasks, slots, &in_statement, queue.as_str())?;
    let queue_name = queue.as_str();
    let notify_here = notify == NotifyIn::Statement;
    let answer = db_
        .query(
            &sql.enqueue_keyless,
            &[
                &queue_name,
                &notify_here,
                &rows.kind,
                &rows.priority,
                &rows.run_at,
                &rows.delay_ms,
                &rows.max_attempts,
                &rows.lease_ms,
                &rows.payload_json,
                &rows.payload,
            ],
        )
        .await
        .map_err(db)?;
    let row = answer
        .first()
        .ok_or_else(|| corrupt("enqueue answered no row"))?;
    let Some(max) = row
        .try_get::<_, Option<i64>>("max_payload")
        .map_err(corrupt)?
    else {
        return Ok(None);
    };
    if let Some(size) = row
        .try_get::<_, Option<i32>>("too_large")
        .map_err(corrupt)?
    {
        return Err(StoreError::PayloadTooLarge {
            size: u64::try_from(size).map_err(corrupt)?,
            max: u64::try_from(max).map_err(corrupt)?,
        });
    }
    let ids: Vec<i64> = row.try_get("ids").map_err(corrupt)?;
    if ids.len() != tasks.len() {
        return Err(corrupt(format!(
            "{} tasks enqueued answered {} ids",
            tasks.len(),
            ids.len()
        )));
    }
    ids.into_iter()
        .map(|id| {
            Ok(EnqueueOutcome {
                id: TaskId(u64::try_from(id).map_err(corrupt)?),
                duplicate: false,
            })
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// Step 1: the queue (created if need be) and `n` fresh ids, ascending.
/// A batch for a new queue is checked against the default settings before
/// the queue is created, so a refused batch creates nothing.
async fn prepare(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    strict: bool,
    queue: &QueueName,
    tasks: &[NewTask],
    slots: &[Slot<'_>],
) -> Result<Target, StoreError> {
    let n = slots.iter().filter(|s| matches!(s, Slot::New(..))).count();
    if let Some(target) = lookup(db_, sql, queue, n).await? {
        return Ok(target);
    }
    if strict {
        return Err(StoreError::QueueNotFound(queue.clone()));
    }
    let defaults = QueueSettings::default();
    let p = settings_params(queue, &defaults)?;
    let provisional = Limits {
        max_attempts: Some(p.max_attempts()),
        max_payload: Some(p.max_payload()),
    };
    Rows::build(tasks, slots, &provisional, queue.as_str())?;
    db_.query(&sql.create_queue, &p.as_params())
        .await
        .map_err(db)?;
    lookup(db_, sql, queue, n)
        .await?
        .ok_or_else(|| corrupt(format!("queue {queue} vanished after it was created")))
}

/// The queue's settings and `n` fresh ids, if the queue exists.
async fn lookup(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    queue: &QueueName,
    n: usize,
) -> Result<Option<Target>, StoreError> {
    let n = i32::try_from(n).map_err(corrupt)?;
    let rows = db_
        .query(&sql.enqueue_prepare, &[&queue.as_str(), &n])
        .await
        .map_err(db)?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let mut ids: Vec<i64> = row.try_get("ids").map_err(corrupt)?;
    ids.sort_unstable();
    Ok(Some(Target {
        queue_id: row.try_get("id").map_err(corrupt)?,
        limits: Limits {
            max_attempts: Some(row.try_get("max_attempts").map_err(corrupt)?),
            max_payload: Some(row.try_get("max_payload").map_err(corrupt)?),
        },
        ids,
    }))
}

/// The new rows as one array per column.
struct Rows<'a> {
    kind: Vec<&'a str>,
    priority: Vec<i16>,
    run_at: Vec<Option<SystemTime>>,
    delay_ms: Vec<i64>,
    key: Vec<Option<&'a str>>,
    max_attempts: Vec<Option<i32>>,
    lease_ms: Vec<Option<i64>>,
    payload_json: Vec<bool>,
    payload: Vec<&'a [u8]>,
}

impl<'a> Rows<'a> {
    /// Checks every task (duplicates included, as they would be refused
    /// on their own) against `limits` and lays out the new ones.
    fn build(
        tasks: &'a [NewTask],
        slots: &[Slot<'a>],
        limits: &Limits,
        default_kind: &'a str,
    ) -> Result<Rows<'a>, StoreError> {
        let n = tasks.len();
        let mut rows = Rows {
            kind: Vec::with_capacity(n),
            priority: Vec::with_capacity(n),
            run_at: Vec::with_capacity(n),
            delay_ms: Vec::with_capacity(n),
            key: Vec::with_capacity(n),
            max_attempts: Vec::with_capacity(n),
            lease_ms: Vec::with_capacity(n),
            payload_json: Vec::with_capacity(n),
            payload: Vec::with_capacity(n),
        };
        for (t, slot) in tasks.iter().zip(slots) {
            if let Some(max) = limits.max_payload {
                let size = t.payload.len() as u64;
                let max = u64::try_from(max).unwrap_or(0);
                if size > max {
                    return Err(StoreError::PayloadTooLarge { size, max });
                }
            }
            let max_attempts = match t.max_attempts {
                Some(0) => return Err(StoreError::bad_request("max_attempts must be at least 1")),
                Some(m) => Some(
                    i32::try_from(m)
                        .map_err(|_| StoreError::bad_request("max_attempts is too large"))?,
                ),
                None => limits.max_attempts,
            };
            let lease_ms = match t.lease_ms {
                Some(0) => return Err(StoreError::bad_request("lease_ms must be at least 1")),
                Some(ms) => Some(millis("lease_ms", Duration::from_millis(ms))?),
                None => None,
            };
            let (run_at, delay_ms) = match t.run_at {
                RunAt::Now => (None, 0),
                RunAt::At(at) => (Some(time(at)?), 0),
                RunAt::After(d) => (None, millis("delay", d)?),
            };
            if let Slot::SameKeyAs(_) = slot {
                continue;
            }
            rows.kind.push(match &t.kind {
                Some(k) => k.as_str(),
                // A task's kind defaults to its queue's name.
                None => default_kind,
            });
            rows.priority.push(t.priority);
            rows.run_at.push(run_at);
            rows.delay_ms.push(delay_ms);
            rows.key.push(t.key.as_ref().map(TaskKey::as_str));
            rows.max_attempts.push(max_attempts);
            rows.lease_ms.push(lease_ms);
            rows.payload_json
                .push(t.payload.format == PayloadFormat::Json);
            rows.payload.push(&t.payload.bytes);
        }
        Ok(rows)
    }
}
