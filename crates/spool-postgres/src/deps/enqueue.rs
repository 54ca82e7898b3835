//! Enqueue of a batch in which tasks name parents (docs/spec.md §3.2), in
//! a transaction: the caller's (`PgStore::enqueue_in`) or the store's own.
//!
//! 1. Every id named is checked against the sequence before anything is
//!    written: one the store never handed out refuses the whole batch.
//! 2. The batch is inserted as any batch is (keys, duplicates), so each
//!    position has its id: a duplicate's is the existing task's.
//! 3. Every parent is locked in id order and read: gone (completed as far
//!    as the store can tell), dead (failed), or live.
//! 4. Each task that names parents, in batch order, gets what
//!    `spool_core::deps::at_enqueue` decides: pending (edges added, parents
//!    marked), released (scheduled or ready, its dependencies recorded), or
//!    cancelled (deleted, key retired), which later tasks of the batch see
//!    as a failed parent.
//!
//! All of it commits or none of it: a refusal rolls the transaction back
//! (the caller's, for a transactional enqueue, whose error says so).

use std::collections::HashMap;

use spool_core::deps::{at_enqueue, check_assigned, resolve, Ending, Outcome};
use spool_core::{NewTask, Parent, QueueName, TaskId};

use super::tx::{pg, Failure};
use super::write::DepsWrite;
use crate::db::Db;
use crate::error::corrupt;
use crate::ops::enqueue::general::{enqueue_general, Enqueued, NotifyIn};
use crate::ops::enqueue::slots::slots;
use crate::sql::Sql;
use crate::values;

/// Enqueues `tasks` (already validated), some of which name parents;
/// `db_` is a transaction.
pub(crate) async fn enqueue_with_deps(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    strict: bool,
    queue: &QueueName,
    tasks: &[NewTask],
    notify: NotifyIn,
) -> Result<Enqueued, Failure> {
    let named: Vec<TaskId> = tasks
        .iter()
        .flat_map(|t| &t.after)
        .filter_map(|p| match p {
            Parent::Task(id) => Some(*id),
            Parent::InBatch(_) => None,
        })
        .collect();
    let rows = db_.query(&sql.deps_next_id, &[]).await.map_err(pg)?;
    let next: i64 = rows
        .first()
        .ok_or_else(|| corrupt("the sequence answered nothing"))?
        .try_get("next_id")
        .map_err(corrupt)?;
    check_assigned(&named, TaskId(u64::try_from(next).map_err(corrupt)?))?;

    let (slots, _) = slots(tasks);
    let done = enqueue_general(db_, sql, strict, queue, tasks, &slots, notify).await?;
    let batch: Vec<TaskId> = done.outcomes.iter().map(|o| o.id).collect();

    let mut parents: Vec<i64> = tasks
        .iter()
        .zip(&done.outcomes)
        .filter(|(_, o)| !o.duplicate)
        .flat_map(|(t, _)| resolve(&t.after, &batch))
        .map(values::id)
        .collect();
    parents.sort_unstable();
    parents.dedup();
    let rows = db_
        .query(&sql.deps_parents, &[&parents])
        .await
        .map_err(pg)?;
    let mut live_or_dead: HashMap<u64, bool> = HashMap::with_capacity(rows.len());
    for row in &rows {
        let id: i64 = row.try_get("id").map_err(corrupt)?;
        let failed: bool = row.try_get("failed").map_err(corrupt)?;
        live_or_dead.insert(u64::try_from(id).map_err(corrupt)?, failed);
    }

    let mut cancelled_here: Vec<TaskId> = Vec::new();
    let (mut edge_parents, mut edge_children) = (Vec::new(), Vec::new());
    for (t, o) in tasks.iter().zip(&done.outcomes) {
        if t.after.is_empty() || o.duplicate {
            continue;
        }
        let after = resolve(&t.after, &batch);
        let ended = |p: TaskId| {
            if cancelled_here.contains(&p) {
                return Some(Ending::Failed);
            }
            match live_or_dead.get(&p.0) {
                None => Some(Ending::Completed),
                Some(true) => Some(Ending::Failed),
                Some(false) => None,
            }
        };
        let Some((deps, outcome)) = at_enqueue(after, t.if_parent_fails, ended) else {
            continue;
        };
        let id = values::id(o.id);
        let write = |released| DepsWrite {
            id,
            after: Some(&deps.after),
            waiting: deps.waiting_on.len(),
            failed: deps.failed,
            policy: Some(deps.if_parent_fails),
            received: None,
            released,
        };
        match outcome {
            Outcome::Cancelled => {
                db_.query(&sql.cancel, &[&id, &true]).await.map_err(pg)?;
                cancelled_here.push(o.id);
            }
            Outcome::Pending => {
                write(false).run(db_, sql).await?;
                for p in &deps.waiting_on {
                    edge_parents.push(values::id(*p));
                    edge_children.push(id);
                }
            }
            Outcome::Released => {
                write(true).run(db_, sql).await?;
            }
        }
    }
    if !edge_parents.is_empty() {
        db_.query(&sql.deps_wait, &[&edge_parents, &edge_children])
            .await
            .map_err(pg)?;
    }
    Ok(done)
}
