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
//!
//! Map: this file runs a batch through the right path; `rows` checks the
//! tasks and lays them out as one array per column; `keyless` holds the
//! one-statement paths.

mod keyless;
mod rows;

use std::collections::HashMap;
use std::time::SystemTime;

use spool_core::store::validate_batch;
use spool_core::task::RunAt;
use spool_core::{EnqueueOutcome, NewTask, QueueName, QueueSettings, StoreError, TaskId, TaskKey};

use crate::backend::Backend;
use crate::db::Db;
use crate::deps::tx::{pg, retried, Failure};
use crate::error::{corrupt, db};
use crate::floor::Ready;
use crate::ops::queues::settings_params;
use crate::sql::Sql;
use keyless::{enqueue_keyless, enqueue_one};
use rows::{Limits, Rows};

impl Backend {
    pub(crate) async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        let appended = appended(&tasks);
        let done = if names_parents(&tasks) {
            validate_batch(&tasks)?;
            retried(|| self.enqueue_with_deps_tx(queue, &tasks)).await?
        } else {
            let client = self.client().await?;
            enqueue_on(
                &client,
                &self.sql,
                self.config.strict_queues,
                queue,
                tasks,
                NotifyIn::Later,
            )
            .await?
        };
        if done.outcomes.iter().any(|o| !o.duplicate) {
            let ready = appended.map_or(Ready::Anywhere, |p| Ready::Appended((p, done.at)));
            self.notify(queue.as_str(), ready);
        }
        Ok(done.outcomes)
    }
}

impl Backend {
    /// A batch that names parents, in a transaction of the store's own.
    async fn enqueue_with_deps_tx(
        &self,
        queue: &QueueName,
        tasks: &[NewTask],
    ) -> Result<Enqueued, Failure> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let done = crate::deps::enqueue::enqueue_with_deps(
            &tx,
            &self.sql,
            self.config.strict_queues,
            queue,
            tasks,
            NotifyIn::Later,
        )
        .await?;
        tx.commit().await.map_err(pg)?;
        Ok(done)
    }
}

/// The smallest priority of tasks appended to the claim order
/// ([`crate::floor`]): tasks to run now go in at the statement's clock, and
/// tasks to run later above it (they are announced again when they fall
/// due). `None` when a task has its own `run_at`: it may lie anywhere.
fn appended(tasks: &[NewTask]) -> Option<i16> {
    if tasks.iter().any(|t| matches!(t.run_at, RunAt::At(_))) {
        return None;
    }
    tasks.iter().map(|t| t.priority).min()
}

/// What an enqueue did: each task's outcome, and the enqueue statement's
/// clock, which is the `run_at` of its tasks to run now.
pub(crate) struct Enqueued {
    pub(crate) outcomes: Vec<EnqueueOutcome>,
    pub(crate) at: SystemTime,
}

/// Who tells waiting claimers about the new tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotifyIn {
    /// The enqueue statement itself: for a caller's transaction, whose
    /// commit we never see.
    Statement,
    /// The caller, once the enqueue has committed ([`Backend::notify`]).
    Later,
}

/// Where each task of the batch goes.
pub(crate) enum Slot<'a> {
    /// Inserted (unless its key is taken), as the n-th new row.
    New(usize, Option<&'a TaskKey>),
    /// A later use of a key already used at this index of the batch.
    SameKeyAs(usize),
}

/// The queue's id, its limits and fresh ids.
struct Target {
    queue_id: i32,
    limits: Limits,
    ids: Vec<i64>,
}

/// Whether a task of the batch names parents: such a batch takes the
/// dependency path ([`crate::deps::enqueue`]), which needs a transaction.
pub(crate) fn names_parents(tasks: &[NewTask]) -> bool {
    tasks.iter().any(|t| !t.after.is_empty())
}

/// Where each task of the batch goes, and whether any has a key.
pub(crate) fn slots(tasks: &[NewTask]) -> (Vec<Slot<'_>>, bool) {
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
    (slots, !first_use.is_empty())
}

/// Enqueues `tasks` through `db`, atomically. A batch that names parents
/// must come in a transaction (`db` is one: the caller's, or the store's
/// own from [`Backend::enqueue`]).
pub(crate) async fn enqueue_on(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    strict: bool,
    queue: &QueueName,
    tasks: Vec<NewTask>,
    notify: NotifyIn,
) -> Result<Enqueued, StoreError> {
    validate_batch(&tasks)?;
    if names_parents(&tasks) {
        return crate::deps::enqueue::enqueue_with_deps(db_, sql, strict, queue, &tasks, notify)
            .await
            .map_err(Failure::into_store);
    }
    let (slots, keyed) = slots(&tasks);
    if !keyed && notify == NotifyIn::Later {
        if let [task @ NewTask { group: None, .. }] = tasks.as_slice() {
            if let Some(done) = enqueue_one(db_, sql, queue, task, &slots).await? {
                return Ok(done);
            }
        }
    }
    if !keyed {
        if let Some(out) = enqueue_keyless(db_, sql, queue, &tasks, &slots, notify).await? {
            return Ok(out);
        }
        // No such queue: the general path creates it (or refuses).
    }
    enqueue_general(db_, sql, strict, queue, &tasks, &slots, notify).await
}

/// The general path: the queue (created if need be) and ids, then keys and
/// the insert (steps 1 and 2 above).
pub(crate) async fn enqueue_general(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    strict: bool,
    queue: &QueueName,
    tasks: &[NewTask],
    slots: &[Slot<'_>],
    notify: NotifyIn,
) -> Result<Enqueued, StoreError> {
    let target = prepare(db_, sql, strict, queue, tasks, slots).await?;
    let rows = Rows::build(tasks, slots, &target.limits, queue.as_str())?;
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
                &rows.traceparent,
                &rows.group,
            ],
        )
        .await
        .map_err(db)?;
    let at = answer
        .first()
        .ok_or_else(|| corrupt("enqueue answered no row"))?
        .try_get("db_now")
        .map_err(corrupt)?;
    let mut owner: HashMap<String, i64> = HashMap::new();
    for row in &answer {
        let key: Option<String> = row.try_get(0).map_err(corrupt)?;
        if let Some(key) = key {
            owner.insert(key, row.try_get(1).map_err(corrupt)?);
        }
    }

    let mut out: Vec<EnqueueOutcome> = Vec::with_capacity(tasks.len());
    for slot in slots {
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
    Ok(Enqueued { outcomes: out, at })
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
