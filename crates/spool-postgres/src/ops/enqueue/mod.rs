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
//! Map: this file runs a batch through the right path; `general` holds
//! the two-statement path and what every path shares; `rows` checks the
//! tasks and lays them out as one array per column; `keyless` holds the
//! one-statement paths.

pub(crate) mod general;
mod keyless;
mod rows;
pub(crate) mod slots;

use spool_core::store::validate_batch;
use spool_core::task::RunAt;
use spool_core::{EnqueueOutcome, NewTask, QueueName, StoreError};

use crate::backend::Backend;
use crate::db::Db;
use crate::deps::tx::{pg, retried, Failure};
use crate::floor::Ready;
use crate::rotate::CurrentGen;
use crate::sql::Sql;
use general::{enqueue_general, Enqueued, NotifyIn};
use keyless::{enqueue_keyless, enqueue_one};
use slots::slots;

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
                &self.current_gen,
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

/// Whether a task of the batch names parents: such a batch takes the
/// dependency path ([`crate::deps::enqueue`]), which needs a transaction.
pub(crate) fn names_parents(tasks: &[NewTask]) -> bool {
    tasks.iter().any(|t| !t.after.is_empty())
}

/// Enqueues `tasks` through `db`, atomically. A batch that names parents
/// must come in a transaction (`db` is one: the caller's, or the store's
/// own from [`Backend::enqueue`]).
pub(crate) async fn enqueue_on(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    current: &CurrentGen,
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
            if let Some(done) = enqueue_one(db_, sql, current, queue, task, &slots).await? {
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
