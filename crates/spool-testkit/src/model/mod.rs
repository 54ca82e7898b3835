//! A reference model of a store: docs/spec.md §3 over plain in-memory maps
//! behind one mutex, simple rather than fast and durable nowhere. It exists
//! to check the suite's own cases before any real store does, and to be
//! compared with a real store operation by operation (the engine's model
//! test); it is no store to use.

mod state;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use spool_core::groups::GroupStats;
use spool_core::{
    Ack, ClaimRequest, Clock, EnqueueOutcome, FailRequest, Kind, LeaseToken, ListRequest, NewTask,
    QueueChange, QueueName, QueueSettings, QueueStats, Schedule, ScheduleSpec, Store, StoreError,
    Task, TaskId, TaskPage, TaskPatch, TaskRef, Timestamp,
};
use tokio::sync::Notify;

use state::State;

/// How often a waiting claim looks again without being woken: time-based
/// readiness (run_at passing, leases expiring) wakes nobody.
const POLL: Duration = Duration::from_millis(20);

/// The reference model: a [`Store`] on `clock`, empty when made. Lease
/// tokens and ids are its own (ids count from 1); backoff jitter is random,
/// so a test that compares it with a store passes the store's `run_at` on
/// as `retry_at`.
pub struct Model {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Woken whenever a task may have become claimable.
    wake: Notify,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").finish_non_exhaustive()
    }
}

impl Model {
    /// An empty model whose every time is `clock`'s.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Model {
            clock,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
        }
    }

    /// Forgets what a store may keep in memory only (docs/spec.md §4),
    /// as the embedded engine does when it restarts: where the groups'
    /// turns stood, and the rate limits' tokens (buckets start full).
    pub fn restarted(&self) {
        let (mut state, _) = self.lock();
        state.forget_memory_only();
    }

    /// The state with expired leases settled, and the time it was settled at.
    fn lock(&self) -> (MutexGuard<'_, State>, Timestamp) {
        let now = self.clock.now();
        let mut state = self.state.lock().expect("no panic while holding the lock");
        state.tick(now);
        (state, now)
    }

    /// Runs a mutation that may make tasks claimable, then wakes waiters.
    fn mutate<T>(&self, f: impl FnOnce(&mut State, Timestamp) -> T) -> T {
        let out = {
            let (mut state, now) = self.lock();
            f(&mut state, now)
        };
        self.wake.notify_waiters();
        out
    }
}

#[async_trait]
impl Store for Model {
    async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        self.mutate(|s, now| s.enqueue(queue, tasks, now))
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError> {
        req.validate()?;
        let deadline = tokio::time::Instant::now() + req.wait;
        loop {
            // Registered before looking, so a wake between look and wait counts.
            let woken = self.wake.notified();
            let got = {
                let (mut state, now) = self.lock();
                state.claim(&req, now)
            };
            let now = tokio::time::Instant::now();
            if !got.is_empty() || now >= deadline {
                return Ok(got);
            }
            let nap = POLL.min(deadline - now);
            let _ = tokio::time::timeout(nap, woken).await;
        }
    }

    async fn ack(&self, id: TaskId, token: LeaseToken, ack: Ack) -> Result<(), StoreError> {
        self.mutate(|s, now| s.ack(id, token, ack, now))
    }

    async fn ack_many(
        &self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        let (mut state, now) = self.lock();
        Ok(acks
            .into_iter()
            .map(|(id, token)| state.ack(id, token, Ack::Done, now))
            .collect())
    }

    async fn fail(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError> {
        self.mutate(|s, now| s.fail(id, token, req, now))
    }

    async fn release(&self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.mutate(|s, now| s.give_back(id, token, None, now).map(|_| ()))
    }

    async fn snooze(
        &self,
        id: TaskId,
        token: LeaseToken,
        run_at: Timestamp,
    ) -> Result<Task, StoreError> {
        self.mutate(|s, now| s.give_back(id, token, Some(run_at), now))
    }

    async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError> {
        let (mut state, now) = self.lock();
        state.extend(id, token, lease, now)
    }

    async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError> {
        self.mutate(|s, now| s.update(&task, patch, now))
    }

    async fn cancel(&self, task: TaskRef) -> Result<(), StoreError> {
        let (mut state, now) = self.lock();
        state.cancel(&task, now)
    }

    async fn get(&self, task: TaskRef) -> Result<Task, StoreError> {
        let (state, now) = self.lock();
        state.get(&task, now)
    }

    async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        self.mutate(|s, now| s.retry(id, now))
    }

    async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError> {
        Ok(self.mutate(|s, now| s.retry_dead(queue, now)))
    }

    async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError> {
        let (state, now) = self.lock();
        state.list(&req, now)
    }

    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        let (state, now) = self.lock();
        Ok(state.stats(now))
    }

    async fn groups(&self, queue: &QueueName, limit: usize) -> Result<Vec<GroupStats>, StoreError> {
        let (state, now) = self.lock();
        state.groups(queue, limit, now)
    }

    async fn put_queue(
        &self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        self.mutate(|s, _| s.put_queue(queue, change))
    }

    async fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError> {
        let (state, _) = self.lock();
        state.get_queue(queue)
    }

    async fn set_paused(&self, queue: &QueueName, paused: bool) -> Result<(), StoreError> {
        self.mutate(|s, _| s.set_paused(queue, paused))
    }

    async fn now(&self) -> Result<Timestamp, StoreError> {
        Ok(self.clock.now())
    }

    async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        self.mutate(|s, now| s.put_schedule(spec, now))
    }

    async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        Ok(self.lock().0.list_schedules())
    }

    async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        self.mutate(|s, _| s.delete_schedule(name))
    }

    async fn fire_schedule(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        self.mutate(|s, now| s.fire_schedule(name, tick, now))
    }
}
