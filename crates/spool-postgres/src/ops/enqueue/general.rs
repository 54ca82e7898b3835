//! The general enqueue path, which every batch can take, and what every
//! path shares: what an enqueue did ([`Enqueued`]) and who notifies waiting claimers
//! ([`NotifyIn`]). Steps 1 and 2 of the parent module's description:
//! `enqueue_prepare`, then `enqueue_insert`. The dependency path
//! ([`crate::deps::enqueue`]) builds on it.

use std::collections::HashMap;
use std::time::SystemTime;

use spool_core::{EnqueueOutcome, NewTask, QueueName, QueueSettings, StoreError, TaskId};

use super::rows::{Limits, Rows};
use super::slots::Slot;
use crate::db::Db;
use crate::error::{corrupt, db};
use crate::ops::queues::settings_params;
use crate::sql::Sql;

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

/// The queue's id, its limits and fresh ids.
struct Target {
    queue_id: i32,
    limits: Limits,
    ids: Vec<i64>,
}

/// The general path: the queue (created if need be) and ids, then keys and
/// the insert (steps 1 and 2 of the parent module's description).
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
