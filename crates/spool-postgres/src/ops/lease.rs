//! What a lease holder does (docs/spec.md §3): ack, ack many, fail, release,
//! snooze, extend.
//!
//! Each is a conditional write on (id, token, lease still valid): the row
//! changes only for the current holder. When the write matches nothing, a
//! second look tells `lease_lost` (the task lives) from `not_found`.
//! Ack is the hot path: [`Backend::ack_many`] is one statement per batch.
//! A task that pending tasks wait for is not ended by these statements:
//! ack and a fail to dead hand it to [`crate::deps::endings`], which ends
//! it and resolves its dependents in one transaction. An ack's result
//! travels only that way: a task nobody waits for is acked by the one
//! statement and its result kept nowhere (docs/spec.md §3.2 "Results").

use std::time::Duration;

use spool_core::transition::{after_failure, push_error, Next};
use spool_core::{
    backoff, Ack, FailRequest, LeaseToken, StoreError, Task, TaskId, TaskResult, TaskState,
    Timestamp,
};
use tokio_postgres::Row;

use crate::backend::Backend;
use crate::db::Db;
use crate::error::{corrupt, db};
use crate::floor::Ready;
use crate::row::{errors_json, StoredTask};
use crate::values::{self, duration, millis, time};

/// What the ack statement did with one item.
#[derive(Debug, PartialEq)]
enum Acked {
    Done,
    Refused(StoreError),
    /// Pending tasks wait for it: left for a transaction that resolves them.
    Dependents,
}

/// A failure as `sql/fail.sql` writes it, decided from the row as read.
pub(crate) struct FailWrite {
    pub(crate) dead: bool,
    run_at: Option<std::time::SystemTime>,
    errors: Vec<spool_core::ErrorRecord>,
    /// Pending tasks wait for the task: a dead write must resolve them.
    pub(crate) has_dependents: bool,
}

impl FailWrite {
    /// Decides with the rules of `spool_core::transition` what a failure
    /// of the task in `row` (`sql/get_task.sql` or `sql/lock_task.sql`)
    /// held under `token` writes; `lease_lost` if the token does not hold.
    pub(crate) fn decide(
        row: &Row,
        token: LeaseToken,
        req: &FailRequest,
    ) -> Result<FailWrite, StoreError> {
        let stored = StoredTask::from_row(row)?;
        if !stored.holds(token) {
            return Err(StoreError::LeaseLost);
        }
        let base = duration(row.try_get("backoff_base_ms").map_err(corrupt)?);
        let max = duration(row.try_get("backoff_max_ms").map_err(corrupt)?);
        let now = stored.now;
        let delay = backoff::delay(stored.attempt, base, max);
        let next = after_failure(
            stored.attempt,
            stored.max_attempts,
            req.discard,
            req.retry_at,
            now,
            delay,
        );
        let (dead, run_at) = match next {
            Next::Dead => (true, None),
            Next::RetryAt(at) => (false, Some(time(at)?)),
        };
        let mut errors = stored.errors;
        push_error(&mut errors, stored.attempt, now, &req.message);
        Ok(FailWrite {
            dead,
            run_at,
            errors,
            has_dependents: stored.has_dependents,
        })
    }

    /// Writes it (`sql/fail.sql`); `resolving` lets a dead write reach a
    /// task with dependents, in the transaction that resolves them.
    pub(crate) async fn write(
        &self,
        db_: &(impl Db + ?Sized),
        sql: &crate::sql::Sql,
        id: TaskId,
        token: LeaseToken,
        resolving: bool,
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        db_.query(
            &sql.fail,
            &[
                &values::id(id),
                &values::token(token),
                &self.dead,
                &self.run_at,
                &errors_json(&self.errors),
                &resolving,
            ],
        )
        .await
    }
}

impl Backend {
    /// Why a write for the holder of `id`'s lease matched nothing.
    pub(crate) async fn refused(&self, id: TaskId) -> StoreError {
        let exists = async {
            let client = self.client().await?;
            let rows = client
                .query(&self.sql.task_exists, &[&values::id(id)])
                .await
                .map_err(db)?;
            let row = rows.first().ok_or_else(|| corrupt("no answer to EXISTS"))?;
            row.try_get::<_, bool>(0).map_err(corrupt)
        };
        match exists.await {
            Ok(true) => StoreError::LeaseLost,
            Ok(false) => StoreError::NotFound,
            Err(e) => e,
        }
    }

    pub(crate) async fn ack(
        &self,
        id: TaskId,
        token: LeaseToken,
        ack: Ack,
    ) -> Result<(), StoreError> {
        match ack {
            // Re-arm: scheduled again with attempt 0 (the periodic pattern).
            Ack::Reschedule(at) => self
                .give_back(id, token, Some(at), Some(0))
                .await
                .map(|_| ()),
            Ack::Done => self.ack_one(id, token, None).await,
            Ack::Result(result) => self.ack_one(id, token, Some(&result)).await,
        }
    }

    /// Acks one task as [`Backend::ack_many`] does, handing `result` to
    /// the tasks waiting for it if some do.
    async fn ack_one(
        &self,
        id: TaskId,
        token: LeaseToken,
        result: Option<&TaskResult>,
    ) -> Result<(), StoreError> {
        match self.ack_statements(&[(id, token)]).await?.pop() {
            Some(Acked::Done) => Ok(()),
            Some(Acked::Refused(e)) => Err(e),
            Some(Acked::Dependents) => self.ack_resolving(id, token, result).await,
            None => Err(corrupt("ack answered nothing")),
        }
    }

    /// Acks a batch in one statement; the few items that pending tasks
    /// wait for, each in a transaction that resolves them.
    pub(crate) async fn ack_many(
        &self,
        acks: &[(TaskId, LeaseToken)],
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        let results = self.ack_statements(acks).await?;
        let mut out = Vec::with_capacity(results.len());
        for (result, (id, token)) in results.into_iter().zip(acks) {
            out.push(match result {
                Acked::Done => Ok(()),
                Acked::Refused(e) => Err(e),
                // Rare: ended in a transaction that resolves its dependents.
                Acked::Dependents => self.ack_resolving(*id, *token, None).await,
            });
        }
        Ok(out)
    }

    /// What the ack statement did with each item of `acks`. The statement
    /// passes over a row that another transaction changed after it began
    /// (it deletes by ctid), so the items it refused get a second look in
    /// a statement of their own: a holder whose heartbeat raced its ack
    /// still has its lease.
    async fn ack_statements(
        &self,
        acks: &[(TaskId, LeaseToken)],
    ) -> Result<Vec<Acked>, StoreError> {
        let mut results = self.ack_statement(acks).await?;
        self.ack_again(acks, &mut results, &self.sql.ack_many, |r| {
            *r == Acked::Refused(StoreError::LeaseLost)
        })
        .await?;
        Ok(results)
    }

    /// One statement that acks every item of `acks`: the one reading the
    /// partition every token names, when they name one
    /// ([`values::leased_in`]), then the whole table's for the items it
    /// did not ack; else the whole table's.
    async fn ack_statement(&self, acks: &[(TaskId, LeaseToken)]) -> Result<Vec<Acked>, StoreError> {
        let partition = acks.first().map(|&(_, token)| values::leased_in(token));
        let one_partition = acks
            .iter()
            .all(|&(_, token)| Some(values::leased_in(token)) == partition);
        match partition {
            Some(partition) if one_partition => {
                let mut results = self.ack_with(&self.sql.ack_in[partition], acks).await?;
                self.ack_again(acks, &mut results, &self.sql.ack_many, |r| {
                    *r != Acked::Done
                })
                .await?;
                Ok(results)
            }
            _ => self.ack_with(&self.sql.ack_many, acks).await,
        }
    }

    /// Acks again, with `statement`, the items whose result `again` picks,
    /// and writes down their new results.
    async fn ack_again(
        &self,
        acks: &[(TaskId, LeaseToken)],
        results: &mut [Acked],
        statement: &str,
        again: impl Fn(&Acked) -> bool,
    ) -> Result<(), StoreError> {
        let picked: Vec<usize> = (0..results.len()).filter(|&i| again(&results[i])).collect();
        if picked.is_empty() {
            return Ok(());
        }
        let items: Vec<(TaskId, LeaseToken)> = picked.iter().map(|&i| acks[i]).collect();
        for (i, result) in picked
            .into_iter()
            .zip(self.ack_with(statement, &items).await?)
        {
            results[i] = result;
        }
        Ok(())
    }

    /// Runs `statement` (`sql/ack_many.sql` as rendered) on `acks`.
    async fn ack_with(
        &self,
        statement: &str,
        acks: &[(TaskId, LeaseToken)],
    ) -> Result<Vec<Acked>, StoreError> {
        if acks.is_empty() {
            return Ok(Vec::new());
        }
        let (ids, tokens) = values::leases(acks);
        let client = self.client().await?;
        let rows = client
            .query(statement, &[&ids, &tokens])
            .await
            .map_err(db)?;
        if rows.len() != acks.len() {
            return Err(corrupt(format!(
                "{} acks answered {} results",
                acks.len(),
                rows.len()
            )));
        }
        drop(client);
        for row in &rows {
            if let Some(queue) = row.try_get::<_, Option<&str>>("freed").map_err(corrupt)? {
                self.notify(queue, Ready::Anywhere);
            }
        }
        rows.iter()
            .map(|row| {
                let outcome: &str = row.try_get(0).map_err(corrupt)?;
                Ok(match outcome {
                    "done" => Acked::Done,
                    "dependents" => Acked::Dependents,
                    "lease_lost" => Acked::Refused(StoreError::LeaseLost),
                    "not_found" => Acked::Refused(StoreError::NotFound),
                    other => return Err(corrupt(format!("ack outcome {other:?}"))),
                })
            })
            .collect()
    }

    /// Ends a lease without completing the task: waiting at `run_at` (now
    /// if `None`) with `attempt` (the claimed attempt given back if `None`).
    pub(crate) async fn give_back(
        &self,
        id: TaskId,
        token: LeaseToken,
        run_at: Option<Timestamp>,
        attempt: Option<i32>,
    ) -> Result<Task, StoreError> {
        let run_at = run_at.map(time).transpose()?;
        let client = self.client().await?;
        let rows = client
            .query(
                &self.sql.give_back,
                &[&values::id(id), &values::token(token), &run_at, &attempt],
            )
            .await
            .map_err(db)?;
        drop(client);
        self.after_write(id, &rows).await
    }

    pub(crate) async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError> {
        if lease.is_zero() {
            return Err(StoreError::bad_request("lease_ms must be at least 1"));
        }
        let lease_ms = millis("lease_ms", lease)?;
        let client = self.client().await?;
        let rows = client
            .query(
                &self.sql.extend,
                &[&values::id(id), &values::token(token), &lease_ms],
            )
            .await
            .map_err(db)?;
        drop(client);
        self.after_write(id, &rows).await
    }

    /// Records a failure. Read, decide with the rules of
    /// `spool_core::transition`, then write on condition that the lease is
    /// still held: two round trips, and nothing changes for a stale holder.
    pub(crate) async fn fail(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.get_task, &[&values::id(id)])
            .await
            .map_err(db)?;
        let row = rows.first().ok_or(StoreError::NotFound)?;
        let decided = FailWrite::decide(row, token, &req)?;
        if decided.dead && decided.has_dependents {
            drop(client);
            return self.fail_resolving(id, token, req).await;
        }
        let rows = decided
            .write(&client, &self.sql, id, token, false)
            .await
            .map_err(db)?;
        drop(client);
        if rows.is_empty() && decided.dead {
            // A task marked meanwhile (a dependent enqueued): the dead write
            // refused it, and the transaction that resolves dependents
            // tells what holds now.
            return self.fail_resolving(id, token, req).await;
        }
        self.after_write(id, &rows).await
    }

    /// The task a lease holder's write answered; wakes its queue's waiters
    /// if it became ready or its lease's end freed a slot (a statement that
    /// ends leases says `frees_slot`), or tells why the write matched
    /// nothing.
    pub(crate) async fn after_write(&self, id: TaskId, rows: &[Row]) -> Result<Task, StoreError> {
        let frees_slot = match rows.first() {
            Some(row) if row.columns().iter().any(|c| c.name() == "frees_slot") => row
                .try_get::<_, Option<bool>>("frees_slot")
                .map_err(corrupt)?
                .unwrap_or(false),
            _ => false,
        };
        let task = match rows.first() {
            // None too when a cancel deleted it since the write.
            Some(row) => self
                .completed(vec![StoredTask::from_row(row)?])
                .await?
                .pop()
                .flatten(),
            None => None,
        };
        match task {
            Some(task) => {
                if task.state == TaskState::Ready || frees_slot {
                    self.notify(task.queue.as_str(), Ready::Anywhere);
                }
                Ok(task)
            }
            None => Err(self.refused(id).await),
        }
    }
}
