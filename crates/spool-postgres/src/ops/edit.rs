//! Changing tasks from outside their lease (docs/spec.md §3): update, cancel,
//! retry, retry every dead task of a queue; and finding a task by key.
//!
//! Update and retry lock the row, derive what it shows (an expired lease is
//! ready or dead by then), check, and write the result back, in one
//! transaction: rare operations, where being exact beats a round trip.
//! A task its last lease left dead, not yet written down, ends there: if
//! pending tasks wait for it they are resolved in the same transaction.
//! A pending task keeps its state through an update (`sql/rewrite_task.sql`).

use std::time::SystemTime;

use spool_core::{
    PayloadFormat, QueueName, StoreError, Task, TaskId, TaskPatch, TaskRef, TaskState, Timestamp,
};
use tokio_postgres::types::ToSql;

use crate::backend::Backend;
use crate::db::Db;
use crate::deps::read::complete;
use crate::deps::resolve::{resolve, Resolved};
use crate::deps::tx::Failure;
use crate::error::{corrupt, db};
use crate::floor::Ready;
use crate::row::{errors_json, StoredTask};
use crate::values::{self, time};
use crate::wake::CANCELS;
use spool_core::deps::Ending;

/// The task `rewrite_task` answered, read in the transaction that holds
/// its row's lock: no ending changes what lies beside the row meanwhile.
async fn rewritten(
    tx: &deadpool_postgres::Transaction<'_>,
    sql: &crate::sql::Sql,
    rows: &[tokio_postgres::Row],
) -> Result<Task, StoreError> {
    let row = rows.first().ok_or(StoreError::NotFound)?;
    complete(tx, sql, vec![StoredTask::from_row(row)?])
        .await?
        .pop()
        .flatten()
        .ok_or(StoreError::NotFound)
}

/// A task's row as the rewrite's lock found it.
struct Locked<'r> {
    row: &'r tokio_postgres::Row,
    /// What the row shows now (an expired lease is ready or dead by now).
    current: Task,
    /// The database's clock when the row was read.
    now: Timestamp,
}

/// What a rewrite writes back (`sql/rewrite_task.sql`'s parameters after
/// the id); the priority and payload stay as they are where `None`.
struct Rewrite<'p> {
    dead: bool,
    run_at: SystemTime,
    priority: Option<i16>,
    payload_json: Option<bool>,
    payload: Option<&'p [u8]>,
    attempt: i32,
}

impl Backend {
    /// The id of the task `task` names, if it lives.
    pub(crate) async fn resolve(&self, task: &TaskRef) -> Result<i64, StoreError> {
        match task {
            TaskRef::Id(id) => Ok(values::id(*id)),
            TaskRef::Key(queue, key) => {
                let client = self.client().await?;
                let rows = client
                    .query(&self.sql.find_key, &[&queue.as_str(), &key.as_str()])
                    .await
                    .map_err(db)?;
                match rows.first() {
                    Some(row) => row.try_get(0).map_err(corrupt),
                    None => Err(StoreError::NotFound),
                }
            }
        }
    }

    pub(crate) async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError> {
        let run_at = patch.run_at.map(time).transpose()?;
        let id = self.resolve(&task).await?;
        self.rewrite(id, |Locked { row, current, .. }| {
            if current.state == TaskState::Leased {
                return Err(StoreError::LeaseHeld);
            }
            if let Some(p) = &patch.payload {
                let max = u64::try_from(row.try_get::<_, i64>("max_payload").map_err(corrupt)?)
                    .map_err(corrupt)?;
                let size = p.len() as u64;
                if size > max {
                    return Err(StoreError::PayloadTooLarge { size, max });
                }
            }
            Ok(Rewrite {
                dead: current.state == TaskState::Dead,
                run_at: match run_at {
                    Some(t) => t,
                    None => time(current.run_at)?,
                },
                priority: patch.priority,
                payload_json: patch
                    .payload
                    .as_ref()
                    .map(|p| p.format == PayloadFormat::Json),
                payload: patch.payload.as_ref().map(|p| p.bytes.as_ref()),
                attempt: i32::try_from(current.attempt).map_err(corrupt)?,
            })
        })
        .await
    }

    pub(crate) async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        self.rewrite(values::id(id), |Locked { current, now, .. }| {
            if current.state != TaskState::Dead {
                return Err(StoreError::bad_request("only a dead task can be retried"));
            }
            Ok(Rewrite {
                dead: false,
                run_at: time(*now)?,
                priority: None,
                payload_json: None,
                payload: None,
                attempt: 0,
            })
        })
        .await
    }

    /// Locks task `id`'s row, lets `plan` check the task it shows and say
    /// what to write, writes it (`sql/rewrite_task.sql`), resolves the
    /// task's dependents if its last lease ran out and this writes that
    /// down, and answers the task as written.
    async fn rewrite<'p>(
        &self,
        id: i64,
        plan: impl FnOnce(&Locked<'_>) -> Result<Rewrite<'p>, StoreError>,
    ) -> Result<Task, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db)?;
        let rows = tx.query(&self.sql.lock_task, &[&id]).await.map_err(db)?;
        let row = rows.first().ok_or(StoreError::NotFound)?;
        let stored = StoredTask::from_row(row)?;
        let ends = stored.died_unrecorded() && stored.has_dependents;
        let now = stored.now;
        let locked = Locked {
            row,
            current: stored.view()?,
            now,
        };
        let w = plan(&locked)?;
        let errors = errors_json(&locked.current.errors);
        let params: [&(dyn ToSql + Sync); 8] = [
            &id,
            &w.dead,
            &w.run_at,
            &w.priority,
            &w.payload_json,
            &w.payload,
            &w.attempt,
            &errors,
        ];
        let rows = tx
            .query(&self.sql.rewrite_task, &params)
            .await
            .map_err(db)?;
        let task = rewritten(&tx, &self.sql, &rows).await?;
        let resolved = self.ended_here(&tx, id, ends).await?;
        tx.commit().await.map_err(db)?;
        drop(client);
        self.announce(&resolved);
        self.woken_if_ready(task)
    }

    /// Resolves the dependents of task `id` when `ends`: its last lease ran
    /// out and this transaction writes that down.
    async fn ended_here(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        id: i64,
        ends: bool,
    ) -> Result<Resolved, StoreError> {
        if !ends {
            return Ok(Resolved::default());
        }
        resolve(tx, &self.sql, vec![(id, Ending::Failed)], None)
            .await
            .map_err(Failure::into_store)
    }

    /// Answers `task`, rewritten; wakes waiters if it is ready.
    fn woken_if_ready(&self, task: Task) -> Result<Task, StoreError> {
        if task.state == TaskState::Ready {
            self.notify(task.queue.as_str(), Ready::Anywhere);
        }
        Ok(task)
    }

    pub(crate) async fn cancel(&self, task: TaskRef) -> Result<(), StoreError> {
        let id = self.resolve(&task).await?;
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.cancel, &[&id, &false])
            .await
            .map_err(db)?;
        drop(client);
        let row = rows.first().ok_or_else(|| corrupt("no count"))?;
        let deleted: i64 = row.try_get(0).map_err(corrupt)?;
        if deleted == 0 {
            // Gone, or pending tasks wait for it: the transaction that
            // resolves them tells which.
            return self.cancel_resolving(id).await;
        }
        // The holder of its lease, in any process, is waiting to hear.
        self.notify(CANCELS, Ready::Anywhere);
        if let Some(queue) = row.try_get::<_, Option<&str>>("freed").map_err(corrupt)? {
            self.notify(queue, Ready::Anywhere);
        }
        Ok(())
    }

    pub(crate) async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError> {
        let (queue_id, _) = self.get_queue(queue).await?;
        // Leases that ran out on their last attempt are dead already, in
        // every view: write them down so the update below sees them.
        self.expire_leases(Some(queue_id)).await?;
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.retry_dead, &[&queue_id])
            .await
            .map_err(db)?;
        drop(client);
        let n: i64 = rows
            .first()
            .ok_or_else(|| corrupt("no count"))?
            .try_get(0)
            .map_err(corrupt)?;
        let n = u64::try_from(n).map_err(corrupt)?;
        if n > 0 {
            self.notify(queue.as_str(), Ready::Anywhere);
        }
        Ok(n)
    }
}
