//! Flow control from the producer side: what a [`Client`] does to tasks
//! and queues that already exist — cancel a task, pause or resume a queue,
//! read and change its claim limits (docs/spec.md §3 **cancel**, §4).
//!
//! Each call is one store call: the store enforces all of it, across every
//! process on it, so a limit set here binds workers anywhere.

use spool_core::{QueueChange, QueueName, QueueSettings, TaskId, TaskKey, TaskRef};

use crate::client::Client;
use crate::error::EnqueueError;

impl Client {
    /// Cancels the task: deletes it in any state, a leased one included,
    /// and retires its key. A worker running it hears of it within 100 ms:
    /// its handler's [`crate::Context::cancellation`] fires, and the
    /// worker reports nothing (the store would refuse it: the task is
    /// gone). Tasks waiting for it follow their `if_parent_fails`. An id
    /// that names no task fails with `not_found`.
    pub async fn cancel(&self, id: TaskId) -> Result<(), EnqueueError> {
        Ok(self.store().cancel(TaskRef::Id(id)).await?)
    }

    /// [`Client::cancel`] of the live task enqueued into `queue` with the
    /// idempotency key `key` ([`crate::EnqueueOptions::key`]), so a
    /// producer that chose its own keys needs no ids.
    pub async fn cancel_key(&self, queue: &str, key: &str) -> Result<(), EnqueueError> {
        let task = TaskRef::Key(QueueName::new(queue)?, TaskKey::new(key)?);
        Ok(self.store().cancel(task).await?)
    }

    /// A paused queue hands out nothing; enqueues still work.
    pub async fn pause(&self, queue: &str) -> Result<(), EnqueueError> {
        Ok(self
            .store()
            .set_paused(&QueueName::new(queue)?, true)
            .await?)
    }

    /// Lets a paused queue hand out tasks again.
    pub async fn resume(&self, queue: &str) -> Result<(), EnqueueError> {
        Ok(self
            .store()
            .set_paused(&QueueName::new(queue)?, false)
            .await?)
    }

    /// The queue's settings, its claim limits (`rate_limit`, `max_leased`,
    /// `group_concurrency`, `group_rate_limit`) among them; `not_found` for a queue nobody
    /// created.
    pub async fn queue_settings(&self, queue: &str) -> Result<QueueSettings, EnqueueError> {
        Ok(self.store().get_queue(&QueueName::new(queue)?).await?)
    }

    /// Changes only the settings `change` names, live: the next claim
    /// obeys them, on every worker. `Some(None)` removes a limit, `None`
    /// keeps it; so a change of the rate limit never undoes a
    /// `max_leased` another process set meanwhile. Creates the queue when
    /// it does not exist; answers the settings now in force.
    pub async fn change_queue(
        &self,
        queue: &str,
        change: QueueChange,
    ) -> Result<QueueSettings, EnqueueError> {
        Ok(self
            .store()
            .put_queue(&QueueName::new(queue)?, change)
            .await?)
    }
}
