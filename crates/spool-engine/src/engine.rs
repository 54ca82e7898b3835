//! The public handle: [`Engine`] implements [`Store`] by sending jobs to the
//! core thread and awaiting their replies.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use spool_core::groups::GroupStats;
use spool_core::lease_wait::{wait_until_lost, RECHECK};
use spool_core::store::validate_lease_wait;
use spool_core::{
    Ack, ClaimRequest, EnqueueOutcome, FailRequest, Kind, LeaseToken, ListRequest, NewTask,
    QueueChange, QueueName, QueueSettings, QueueStats, Schedule, ScheduleSpec, Store, StoreError,
    Task, TaskId, TaskPage, TaskPatch, TaskRef, Timestamp,
};
use spool_wal::{SegmentReader, Wal, WalConfig};
use tokio::sync::{oneshot, watch};

use crate::config::EngineConfig;
use crate::core::{Core, CoreSettings, Job};
use crate::error::EngineError;
use crate::payload_runs::read_payloads;
use crate::recovery::recover;
use crate::state::TaskView;

/// The embedded store. Cheap to share behind an `Arc`; dropping the last
/// handle flushes the log and releases the data directory.
pub struct Engine {
    jobs: Option<flume::Sender<Job>>,
    /// Reads payloads from the log, on the caller's thread.
    payloads: Arc<SegmentReader>,
    core: Option<JoinHandle<()>>,
    poisoned: Arc<AtomicBool>,
    /// Announces schedule puts and deletes to schedulers.
    schedules: watch::Sender<()>,
    /// Announces cancels to lease waiters: every change of a task from
    /// outside its lease goes through this handle, since one process owns
    /// the data directory.
    cancels: watch::Sender<()>,
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
        let payloads = writer.reader();
        let poisoned = Arc::new(AtomicBool::new(false));
        let core = Core::new(
            recovered.state,
            config.clock.clone(),
            recovered.last_now,
            CoreSettings {
                strict_queues: config.strict_queues,
                checkpoint_bytes: config.checkpoint_bytes,
                checkpoint_backoff: (config.checkpoint_backoff_min, config.checkpoint_backoff_max),
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
            payloads,
            core: Some(thread),
            poisoned,
            schedules: watch::Sender::new(()),
            cancels: watch::Sender::new(()),
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

impl Engine {
    /// Fills in a task's payload from the log. Runs after the answer is
    /// durable (the bytes are written) and off the core thread.
    fn load(&self, view: TaskView) -> Result<Task, StoreError> {
        self.load_all(vec![view])?
            .pop()
            .ok_or_else(|| StoreError::Internal("a payload read answered nothing".into()))
    }

    /// Fills in the payloads of many tasks, with one read per run of
    /// neighbours in the log ([`crate::payload_runs`]).
    fn load_all(&self, views: Vec<TaskView>) -> Result<Vec<Task>, StoreError> {
        let positions: Vec<_> = views
            .iter()
            .filter(|v| v.in_hand.is_none())
            .map(|v| v.payload.at())
            .collect();
        // In the order of `positions`: the views without a payload in hand.
        let mut read = read_payloads(&self.payloads, &positions, usize::MAX).into_iter();
        views
            .into_iter()
            .map(|v| {
                let mut task = v.task;
                let bytes = match v.in_hand {
                    Some(bytes) => Ok(bytes),
                    None => read
                        .next()
                        .flatten()
                        .unwrap_or_else(|| Err("not read".into())),
                };
                task.payload.bytes = bytes.map_err(|e| {
                    StoreError::Internal(format!("reading the payload of task {}: {e}", task.id))
                })?;
                Ok(task)
            })
            .collect()
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
        let views = rx.await.map_err(|_| gone())??;
        self.load_all(views)
    }

    async fn ack(&self, id: TaskId, token: LeaseToken, ack: Ack) -> Result<(), StoreError> {
        self.call(move |c| c.ack(id, token, ack)).await
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
        let view = self.call(move |c| c.fail(id, token, req)).await?;
        self.load(view)
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
        let view = self.call(move |c| c.snooze(id, token, run_at)).await?;
        self.load(view)
    }

    async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError> {
        let view = self.call(move |c| c.extend(id, token, lease)).await?;
        self.load(view)
    }

    async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError> {
        let view = self.call(move |c| c.update(task, patch)).await?;
        self.load(view)
    }

    async fn cancel(&self, task: TaskRef) -> Result<(), StoreError> {
        self.call(move |c| c.cancel(task)).await?;
        self.cancels.send_replace(());
        Ok(())
    }

    async fn wait_leases_lost(
        &self,
        leases: &[(TaskId, LeaseToken)],
        wait: Duration,
    ) -> Result<Vec<TaskId>, StoreError> {
        validate_lease_wait(leases.len(), wait)?;
        let signal = Some(self.cancels.subscribe());
        wait_until_lost(signal, RECHECK, wait, || {
            let leases = leases.to_vec();
            self.call(move |c| c.leases_lost(&leases))
        })
        .await
    }

    async fn get(&self, task: TaskRef) -> Result<Task, StoreError> {
        let view = self.call(move |c| c.get(task)).await?;
        self.load(view)
    }

    async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        let view = self.call(move |c| c.retry(id)).await?;
        self.load(view)
    }

    async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError> {
        let queue = queue.clone();
        self.call(move |c| c.retry_dead(&queue)).await
    }

    async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError> {
        let (views, next_cursor) = self.call(move |c| c.list(req)).await?;
        Ok(TaskPage {
            tasks: self.load_all(views)?,
            next_cursor,
        })
    }

    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        self.call(|c| c.stats()).await
    }

    async fn groups(&self, queue: &QueueName, limit: usize) -> Result<Vec<GroupStats>, StoreError> {
        let queue = queue.clone();
        self.call(move |c| c.groups(&queue, limit)).await
    }

    async fn put_queue(
        &self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        let queue = queue.clone();
        self.call(move |c| c.put_queue(&queue, change)).await
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
        // Refused once stopped, as every other call is: health checks read
        // the clock, and must see a stopped engine.
        self.call(|c| c.refuse_if_poisoned().map(|()| c.now()))
            .await
    }

    async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        let put = self.call(move |c| c.put_schedule(spec)).await?;
        self.schedules.send_replace(());
        Ok(put)
    }

    async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.call(|c| c.list_schedules()).await
    }

    async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        let name = name.clone();
        self.call(move |c| c.delete_schedule(&name)).await?;
        self.schedules.send_replace(());
        Ok(())
    }

    fn schedule_changes(&self) -> Option<watch::Receiver<()>> {
        Some(self.schedules.subscribe())
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
