//! Ending a task that pending tasks wait for, or that holds its parents'
//! results (`has_dependents`): ack, fail to dead, cancel, and the
//! write-down of a last lease that ran out.
//!
//! The one-statement paths leave such a task alone; here each is one
//! transaction that locks the task, checks what the one-statement path
//! checks, ends it, and resolves its dependents ([`super::resolve`]), so
//! the ending and what it does to them commit together, on any process.
//! An ack or cancel deletes the task's results (`task_results`) after the
//! task, in the same transaction; a task that goes dead keeps them.
//! Waiting claimers of queues where a task was released are woken after
//! the commit, as any enqueue wakes them.

use spool_core::deps::Ending;
use spool_core::{FailRequest, LeaseToken, StoreError, Task, TaskId, TaskResult};
use tokio_postgres::Row;

use super::resolve::{resolve, Resolved};
use super::tx::{pg, retried, Failure};
use crate::backend::Backend;
use crate::error::corrupt;
use crate::floor::Ready;
use crate::ops::lease::FailWrite;
use crate::row::StoredTask;
use crate::sweep::ExpiredLease;
use crate::values;
use crate::wake::CANCELS;

/// The queue where ending a lease freed a slot (`freed` of
/// `sql/cancel.sql`), if any.
fn freed(rows: &[Row]) -> Result<Option<String>, StoreError> {
    match rows.first() {
        Some(row) => row.try_get("freed").map_err(corrupt),
        None => Ok(None),
    }
}

/// How many tasks `sql/cancel.sql` deleted.
fn deleted(rows: &[Row]) -> Result<i64, StoreError> {
    rows.first()
        .ok_or_else(|| corrupt("no count"))?
        .try_get(0)
        .map_err(corrupt)
}

impl Backend {
    /// Wakes what resolving released, once it committed.
    pub(crate) fn announce(&self, resolved: &Resolved) {
        for queue in &resolved.released {
            self.notify(queue, Ready::Anywhere);
        }
    }

    /// Acks task `id` held under `token`, and resolves its dependents,
    /// handing `result`, if any, to those that still wait for it.
    pub(crate) async fn ack_resolving(
        &self,
        id: TaskId,
        token: LeaseToken,
        result: Option<&TaskResult>,
    ) -> Result<(), StoreError> {
        let (slot, resolved) = retried(|| self.try_ack_resolving(id, token, result)).await?;
        if let Some(queue) = slot {
            self.notify(&queue, Ready::Anywhere);
        }
        self.announce(&resolved);
        Ok(())
    }

    async fn try_ack_resolving(
        &self,
        id: TaskId,
        token: LeaseToken,
        result: Option<&TaskResult>,
    ) -> Result<(Option<String>, Resolved), Failure> {
        let id = values::id(id);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let rows = tx.query(&self.sql.lock_task, &[&id]).await.map_err(pg)?;
        let row = rows.first().ok_or(StoreError::NotFound)?;
        let stored = StoredTask::from_row(row)?;
        if !stored.holds(token) {
            return Err(StoreError::LeaseLost.into());
        }
        // Deleting it and retiring its key is what a cancel does too.
        let gone = tx
            .query(&self.sql.cancel, &[&id, &true])
            .await
            .map_err(pg)?;
        if stored.deps.is_some() {
            tx.query(&self.sql.deps_drop_results, &[&id])
                .await
                .map_err(pg)?;
        }
        let slot = freed(&gone)?;
        let left = result.map(|r| (id, r));
        let resolved = resolve(&tx, &self.sql, vec![(id, Ending::Completed)], left).await?;
        tx.commit().await.map_err(pg)?;
        Ok((slot, resolved))
    }

    /// Cancels task `id`, which pending tasks may wait for, and resolves
    /// them; `not_found` if it is gone.
    pub(crate) async fn cancel_resolving(&self, id: i64) -> Result<(), StoreError> {
        let (slot, resolved) = retried(|| self.try_cancel_resolving(id)).await?;
        self.notify(CANCELS, Ready::Anywhere);
        if let Some(queue) = slot {
            self.notify(&queue, Ready::Anywhere);
        }
        self.announce(&resolved);
        Ok(())
    }

    async fn try_cancel_resolving(&self, id: i64) -> Result<(Option<String>, Resolved), Failure> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let gone = tx
            .query(&self.sql.cancel, &[&id, &true])
            .await
            .map_err(pg)?;
        if deleted(&gone)? == 0 {
            return Err(StoreError::NotFound.into());
        }
        tx.query(&self.sql.deps_drop_results, &[&id])
            .await
            .map_err(pg)?;
        let slot = freed(&gone)?;
        let resolved = resolve(&tx, &self.sql, vec![(id, Ending::Failed)], None).await?;
        tx.commit().await.map_err(pg)?;
        Ok((slot, resolved))
    }

    /// Records a failure of task `id` held under `token` that may leave it
    /// dead, and resolves its dependents if it does.
    pub(crate) async fn fail_resolving(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError> {
        let (rows, resolved) = retried(|| self.try_fail_resolving(id, token, &req)).await?;
        self.announce(&resolved);
        self.after_write(id, &rows).await
    }

    async fn try_fail_resolving(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: &FailRequest,
    ) -> Result<(Vec<Row>, Resolved), Failure> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let rows = tx
            .query(&self.sql.lock_task, &[&values::id(id)])
            .await
            .map_err(pg)?;
        let row = rows.first().ok_or(StoreError::NotFound)?;
        let decided = FailWrite::decide(row, token, req)?;
        let written = decided
            .write(&tx, &self.sql, id, token, true)
            .await
            .map_err(pg)?;
        let resolved = if decided.dead && !written.is_empty() {
            resolve(&tx, &self.sql, vec![(values::id(id), Ending::Failed)], None).await?
        } else {
            Resolved::default()
        };
        tx.commit().await.map_err(pg)?;
        Ok((written, resolved))
    }

    /// Writes down the last lease of a task with dependents that ran out:
    /// dead, and its dependents resolved. Answers whether it was written
    /// (the lease is still the one read).
    pub(crate) async fn expire_resolving(&self, lease: &ExpiredLease) -> Result<bool, StoreError> {
        let (written, resolved) = retried(|| self.try_expire_resolving(lease)).await?;
        self.announce(&resolved);
        Ok(written)
    }

    async fn try_expire_resolving(
        &self,
        lease: &ExpiredLease,
    ) -> Result<(bool, Resolved), Failure> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let written = lease.write(&tx, &self.sql, true).await?;
        let resolved = if written {
            resolve(&tx, &self.sql, vec![(lease.id, Ending::Failed)], None).await?
        } else {
            Resolved::default()
        };
        tx.commit().await.map_err(pg)?;
        Ok((written, resolved))
    }
}
