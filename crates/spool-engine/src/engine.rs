//! The public handle: [`Engine`] implements [`Store`] by sending jobs to the
//! core thread and awaiting their replies.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use spool_core::{
    ClaimRequest, EnqueueOutcome, FailRequest, Kind, LeaseToken, ListRequest, NewTask, QueueName,
    QueueSettings, QueueStats, Schedule, ScheduleSpec, Store, StoreError, Task, TaskId, TaskPage,
    TaskPatch, TaskRef, Timestamp,
};
use spool_wal::{Wal, WalConfig};
use tokio::sync::oneshot;

use crate::config::EngineConfig;
use crate::core::{Core, CoreSettings, Job};
use crate::error::EngineError;
use crate::recovery::recover;

/// The embedded store. Cheap to share behind an `Arc`; dropping the last
/// handle flushes the log and releases the data directory.
pub struct Engine {
    jobs: Option<flume::Sender<Job>>,
    core: Option<JoinHandle<()>>,
    poisoned: Arc<AtomicBool>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("poisoned", &self.is_poisoned())
            .finish_non_exhaustive()
    }
}

fn gone() -> StoreError {
    StoreError::Unavailable("the engine has stopped".into())
}

impl Engine {
    /// Opens (or creates) the data directory: locks it, recovers state from
    /// the newest checkpoint and the log, and starts the core and log threads.
    pub fn open(config: EngineConfig) -> Result<Engine, EngineError> {
        let mut wal = Wal::open(
            config.fs.clone(),
            WalConfig {
                dir: config.dir.clone(),
                segment_size: config.segment_size,
                recovery: config.recovery,
            },
        )?;
        let recovered = recover(&mut wal)?;
        tracing::info!(
            dir = %config.dir.display(),
            tasks = recovered.state.tasks.len(),
            next_lsn = recovered.next_lsn,
            "engine recovered"
        );
        let writer = wal.start_writer()?;
        let poisoned = Arc::new(AtomicBool::new(false));
        let core = Core::new(
            recovered.state,
            config.clock.clone(),
            recovered.last_now,
            CoreSettings {
                strict_queues: config.strict_queues,
                checkpoint_bytes: config.checkpoint_bytes,
                dir: config.dir.clone(),
                fs: config.fs.clone(),
            },
            writer,
            recovered.next_lsn,
            poisoned.clone(),
        );
        let (tx, rx) = flume::bounded(config.intake);
        let thread = std::thread::Builder::new()
            .name("spool-core".into())
            .spawn(move || core.run(rx))
            .map_err(EngineError::Thread)?;
        Ok(Engine {
            jobs: Some(tx),
            core: Some(thread),
            poisoned,
        })
    }

    /// True once a log write or sync failed: the engine then refuses every
    /// request, and the process should restart to recover from disk.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// Takes a checkpoint now and waits until it is published.
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        self.send(Box::new(move |core: &mut Core| {
            core.start_checkpoint(Some(tx))
        }))
        .await?;
        rx.await.map_err(|_| gone())?
    }

    async fn send(&self, job: Job) -> Result<(), StoreError> {
        let jobs = self.jobs.as_ref().ok_or_else(gone)?;
        jobs.send_async(job).await.map_err(|_| gone())
    }

    /// Runs `f` on the core thread; the answer arrives once durable.
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Core) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.send(Box::new(move |core: &mut Core| {
            let result = f(core);
            core.respond(result, tx);
        }))
        .await?;
        rx.await.map_err(|_| gone())?
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(core) = self.core.take() {
            if core.join().is_err() {
                tracing::error!("the engine's core thread panicked");
            }
        }
    }
}

#[async_trait]
impl Store for Engine {
    async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        let queue = queue.clone();
        self.call(move |c| c.enqueue(&queue, tasks)).await
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.send(Box::new(move |core: &mut Core| core.claim(req, tx)))
            .await?;
        rx.await.map_err(|_| gone())?
    }

    async fn ack(
        &self,
        id: TaskId,
        token: LeaseToken,
        reschedule_at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        self.call(move |c| c.ack(id, token, reschedule_at)).await
    }

    async fn ack_many(
        &self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        self.call(move |c| c.ack_many(acks)).await
    }

    async fn fail(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError> {
        self.call(move |c| c.fail(id, token, req)).await
    }

    async fn release(&self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.call(move |c| c.release(id, token)).await
    }

    async fn snooze(
        &self,
        id: TaskId,
        token: LeaseToken,
        run_at: Timestamp,
    ) -> Result<Task, StoreError> {
        self.call(move |c| c.snooze(id, token, run_at)).await
    }

    async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError> {
        self.call(move |c| c.extend(id, token, lease)).await
    }

    async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError> {
        self.call(move |c| c.update(task, patch)).await
    }

    async fn cancel(&self, task: TaskRef) -> Result<(), StoreError> {
        self.call(move |c| c.cancel(task)).await
    }

    async fn get(&self, task: TaskRef) -> Result<Task, StoreError> {
        self.call(move |c| c.get(task)).await
    }

    async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        self.call(move |c| c.retry(id)).await
    }

    async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError> {
        let queue = queue.clone();
        self.call(move |c| c.retry_dead(&queue)).await
    }

    async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError> {
        self.call(move |c| c.list(req)).await
    }

    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        self.call(|c| c.stats()).await
    }

    async fn put_queue(
        &self,
        queue: &QueueName,
        settings: QueueSettings,
    ) -> Result<QueueSettings, StoreError> {
        let queue = queue.clone();
        self.call(move |c| c.put_queue(&queue, settings)).await
    }

    async fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError> {
        let queue = queue.clone();
        self.call(move |c| c.get_queue(&queue)).await
    }

    async fn set_paused(&self, queue: &QueueName, paused: bool) -> Result<(), StoreError> {
        let queue = queue.clone();
        self.call(move |c| c.set_paused(&queue, paused)).await
    }

    async fn now(&self) -> Result<Timestamp, StoreError> {
        self.call(|c| Ok(c.now())).await
    }

    async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        self.call(move |c| c.put_schedule(spec)).await
    }

    async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.call(|c| c.list_schedules()).await
    }

    async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        let name = name.clone();
        self.call(move |c| c.delete_schedule(&name)).await
    }

    async fn fire_schedule(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        let name = name.clone();
        self.call(move |c| c.fire_schedule(&name, tick)).await
    }
}
