//! The embedded engine on tokio's paused clock, so a test that watches a
//! schedule for many seconds takes a blink of real time.
//!
//! Paused tokio time jumps to the next timer whenever every task waits,
//! and the engine works on threads of its own, by its own clock. Three
//! things make the runtime and the engine share one clock:
//! - the engine reads a [`ManualClock`] set to tokio's time before every
//!   call, so its timestamps and the runtime's sleeps agree;
//! - every call runs to its end on the test's thread, blocking it, so
//!   tokio cannot skip time while the engine works (it would, seeing every
//!   task wait);
//! - a claim's long poll waits in tokio's time: the engine's own waits in
//!   real time and would hold the test's thread. A claim is tried without
//!   waiting, and tried again after the next change made through this
//!   store, or once its wait is over. A task that falls due by time alone
//!   is therefore seen only then: fine for schedules, whose tasks are
//!   ready when fired.
//!
//! Only for `#[tokio::test(start_paused = true)]` tests (which run on one
//! thread), with every call to the engine going through [`Paused`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use spool_core::{
    Ack, ClaimRequest, Clock, EnqueueOutcome, FailRequest, GroupStats, Kind, LeaseToken,
    ListRequest, ManualClock, NewTask, QueueChange, QueueName, QueueSettings, QueueStats, Schedule,
    ScheduleSpec, Store, StoreError, SystemClock, Task, TaskId, TaskPage, TaskPatch, TaskRef,
    Timestamp,
};
use spool_engine::{Engine, EngineConfig};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

/// Tokio's time as a store timestamp: it starts at the wall clock's time,
/// so timestamps look real, and moves only as tokio's paused clock does.
#[derive(Debug)]
pub(crate) struct PausedClock {
    origin: Instant,
    at: Timestamp,
}

impl Clock for PausedClock {
    fn now(&self) -> Timestamp {
        self.at.plus(self.origin.elapsed())
    }
}

/// An engine in a temporary directory, reached on tokio's paused clock.
pub(crate) struct Paused {
    engine: Engine,
    engine_clock: Arc<ManualClock>,
    pub clock: Arc<PausedClock>,
    /// Wakes waiting claims after a change.
    changed: Notify,
    _dir: tempfile::TempDir,
}

impl Paused {
    pub(crate) fn new() -> Arc<Self> {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(PausedClock {
            origin: Instant::now(),
            at: SystemClock.now(),
        });
        let engine_clock = Arc::new(ManualClock::new(clock.now()));
        let mut config = EngineConfig::new(dir.path());
        config.clock = engine_clock.clone();
        Arc::new(Paused {
            engine: Engine::open(config).unwrap(),
            engine_clock,
            clock,
            changed: Notify::new(),
            _dir: dir,
        })
    }

    /// Runs one engine call at tokio's time, holding the thread till done.
    fn call<T>(&self, call: impl Future<Output = T>) -> T {
        self.engine_clock.set(self.clock.now());
        futures::executor::block_on(call)
    }

    /// [`Paused::call`] for a call that may make tasks claimable: it
    /// wakes the waiting claims.
    fn change<T>(&self, call: impl Future<Output = T>) -> T {
        let answer = self.call(call);
        self.changed.notify_waiters();
        answer
    }
}

#[async_trait]
impl Store for Paused {
    async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        self.change(self.engine.enqueue(queue, tasks))
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError> {
        let until = Instant::now() + req.wait;
        let now = req.clone().wait(Duration::ZERO);
        loop {
            // Registered before the try, so a change right after it counts.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let tasks = self.call(self.engine.claim(now.clone()))?;
            if !tasks.is_empty() || Instant::now() >= until {
                return Ok(tasks);
            }
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(until) => {}
            }
        }
    }

    async fn ack(&self, id: TaskId, token: LeaseToken, ack: Ack) -> Result<(), StoreError> {
        self.change(self.engine.ack(id, token, ack))
    }

    async fn ack_many(
        &self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        self.change(self.engine.ack_many(acks))
    }

    async fn fail(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError> {
        self.change(self.engine.fail(id, token, req))
    }

    async fn release(&self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.change(self.engine.release(id, token))
    }

    async fn snooze(
        &self,
        id: TaskId,
        token: LeaseToken,
        run_at: Timestamp,
    ) -> Result<Task, StoreError> {
        self.change(self.engine.snooze(id, token, run_at))
    }

    async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError> {
        self.change(self.engine.extend(id, token, lease))
    }

    async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError> {
        self.change(self.engine.update(task, patch))
    }

    async fn cancel(&self, task: TaskRef) -> Result<(), StoreError> {
        self.change(self.engine.cancel(task))
    }

    async fn get(&self, task: TaskRef) -> Result<Task, StoreError> {
        self.call(self.engine.get(task))
    }

    async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        self.change(self.engine.retry(id))
    }

    async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError> {
        self.change(self.engine.retry_dead(queue))
    }

    async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError> {
        self.call(self.engine.list(req))
    }

    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        self.call(self.engine.stats())
    }

    async fn groups(&self, queue: &QueueName, limit: usize) -> Result<Vec<GroupStats>, StoreError> {
        self.call(self.engine.groups(queue, limit))
    }

    async fn put_queue(
        &self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        self.change(self.engine.put_queue(queue, change))
    }

    async fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError> {
        self.call(self.engine.get_queue(queue))
    }

    async fn set_paused(&self, queue: &QueueName, paused: bool) -> Result<(), StoreError> {
        self.change(self.engine.set_paused(queue, paused))
    }

    async fn now(&self) -> Result<Timestamp, StoreError> {
        self.call(self.engine.now())
    }

    async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        self.change(self.engine.put_schedule(spec))
    }

    async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.call(self.engine.list_schedules())
    }

    async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        self.change(self.engine.delete_schedule(name))
    }

    fn schedule_changes(&self) -> Option<watch::Receiver<()>> {
        self.engine.schedule_changes()
    }

    async fn fire_schedule(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        self.change(self.engine.fire_schedule(name, tick))
    }
}
