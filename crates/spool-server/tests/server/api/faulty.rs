//! A store that fails on demand, wrapped around the real engine: to test
//! how the server answers a store that hangs, is down, or has a bug.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use spool_core::{
    Ack, ClaimRequest, EnqueueOutcome, FailRequest, GroupStats, LeaseToken, ListRequest, NewTask,
    QueueChange, QueueName, QueueSettings, QueueStats, Store, StoreError, Task, TaskId, TaskPage,
    TaskPatch, TaskRef, Timestamp,
};

/// How the store behaves now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Mode {
    Normal = 0,
    Hang = 1,
    Down = 2,
    Bug = 3,
    /// Reads of queue settings answer 300 ms after reading; all else is
    /// normal.
    SlowSettingsRead = 4,
}

/// A leak the server must never show a client.
pub(crate) const SECRET: &str = "/var/lib/spool/secret-segment.log";

pub(crate) struct Faulty {
    inner: Arc<dyn Store>,
    mode: AtomicU8,
}

impl Faulty {
    pub(crate) fn new(inner: Arc<dyn Store>) -> Arc<Self> {
        Arc::new(Faulty {
            inner,
            mode: AtomicU8::new(Mode::Normal as u8),
        })
    }

    pub(crate) fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    async fn gate(&self) -> Result<(), StoreError> {
        match self.mode.load(Ordering::SeqCst) {
            1 => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            }
            2 => Err(StoreError::Unavailable(format!("fsync failed on {SECRET}"))),
            3 => Err(StoreError::Internal(format!("index corrupt near {SECRET}"))),
            _ => Ok(()),
        }
    }
}

#[async_trait]
impl Store for Faulty {
    async fn enqueue(
        &self,
        q: &QueueName,
        t: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        self.gate().await?;
        self.inner.enqueue(q, t).await
    }
    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError> {
        self.gate().await?;
        self.inner.claim(req).await
    }
    async fn ack(&self, id: TaskId, t: LeaseToken, r: Ack) -> Result<(), StoreError> {
        self.gate().await?;
        self.inner.ack(id, t, r).await
    }
    async fn ack_many(
        &self,
        a: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        self.gate().await?;
        self.inner.ack_many(a).await
    }
    async fn fail(&self, id: TaskId, t: LeaseToken, r: FailRequest) -> Result<Task, StoreError> {
        self.gate().await?;
        self.inner.fail(id, t, r).await
    }
    async fn release(&self, id: TaskId, t: LeaseToken) -> Result<(), StoreError> {
        self.gate().await?;
        self.inner.release(id, t).await
    }
    async fn snooze(&self, id: TaskId, t: LeaseToken, at: Timestamp) -> Result<Task, StoreError> {
        self.gate().await?;
        self.inner.snooze(id, t, at).await
    }
    async fn extend(&self, id: TaskId, t: LeaseToken, d: Duration) -> Result<Task, StoreError> {
        self.gate().await?;
        self.inner.extend(id, t, d).await
    }
    async fn update(&self, t: TaskRef, p: TaskPatch) -> Result<Task, StoreError> {
        self.gate().await?;
        self.inner.update(t, p).await
    }
    async fn cancel(&self, t: TaskRef) -> Result<(), StoreError> {
        self.gate().await?;
        self.inner.cancel(t).await
    }
    async fn get(&self, t: TaskRef) -> Result<Task, StoreError> {
        self.gate().await?;
        self.inner.get(t).await
    }
    async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        self.gate().await?;
        self.inner.retry(id).await
    }
    async fn retry_dead(&self, q: &QueueName) -> Result<u64, StoreError> {
        self.gate().await?;
        self.inner.retry_dead(q).await
    }
    async fn list(&self, r: ListRequest) -> Result<TaskPage, StoreError> {
        self.gate().await?;
        self.inner.list(r).await
    }
    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        self.gate().await?;
        self.inner.stats().await
    }
    async fn groups(&self, q: &QueueName, limit: usize) -> Result<Vec<GroupStats>, StoreError> {
        self.gate().await?;
        self.inner.groups(q, limit).await
    }
    async fn put_queue(
        &self,
        q: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        self.gate().await?;
        self.inner.put_queue(q, change).await
    }
    async fn get_queue(&self, q: &QueueName) -> Result<QueueSettings, StoreError> {
        self.gate().await?;
        let read = self.inner.get_queue(q).await;
        if self.mode.load(Ordering::SeqCst) == Mode::SlowSettingsRead as u8 {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        read
    }
    async fn set_paused(&self, q: &QueueName, p: bool) -> Result<(), StoreError> {
        self.gate().await?;
        self.inner.set_paused(q, p).await
    }
    async fn now(&self) -> Result<Timestamp, StoreError> {
        self.gate().await?;
        self.inner.now().await
    }
}
