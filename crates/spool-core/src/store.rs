//! The [`Store`] trait: the one seam between Spool's semantics and where
//! tasks are kept.
//!
//! Every store (embedded engine, PostgreSQL, remote server) implements it and
//! passes the same conformance suite (`spool-testkit`). The guarantees are
//! docs/spec.md §3: every mutating call is durable before it returns; a task is never
//! handed to two claimers while its lease is valid; a token from an expired
//! lease gets [`StoreError::LeaseLost`] and changes nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::StoreError;
use crate::groups::GroupStats;
use crate::names::{Kind, QueueName, TaskKey};
use crate::outcome::Ack;
use crate::schedule::{Schedule, ScheduleSpec};
use crate::settings::{QueueChange, QueueSettings};
use crate::task::{LeaseToken, NewTask, Payload, Task, TaskId, TaskState};
use crate::time::Timestamp;

/// Most tasks in one enqueue batch.
pub const MAX_BATCH: usize = 10_000;
/// Checks an enqueue batch before anything of it is written: 1 to
/// [`MAX_BATCH`] tasks, each valid ([`NewTask::validate`]).
pub fn validate_batch(tasks: &[NewTask]) -> Result<(), StoreError> {
    if tasks.is_empty() {
        return Err(StoreError::bad_request("a batch needs at least one task"));
    }
    if tasks.len() > MAX_BATCH {
        return Err(StoreError::bad_request(format!(
            "a batch holds at most {MAX_BATCH} tasks"
        )));
    }
    tasks.iter().try_for_each(NewTask::validate)?;
    crate::deps::validate_in_batch(tasks)
}

/// Refuses a wait on no leases, on more than [`MAX_LEASE_WAIT`], or for
/// longer than [`MAX_WAIT`], rather than clamping (docs/spec.md §7.1).
pub fn validate_lease_wait(leases: usize, wait: Duration) -> Result<(), StoreError> {
    if leases == 0 || leases > MAX_LEASE_WAIT {
        return Err(StoreError::bad_request(format!(
            "leases must hold 1 to {MAX_LEASE_WAIT} items"
        )));
    }
    if wait > MAX_WAIT {
        return Err(StoreError::bad_request(format!(
            "wait_ms must be between 0 and {}",
            MAX_WAIT.as_millis()
        )));
    }
    Ok(())
}

/// Most tasks one claim may take.
pub const MAX_CLAIM: u32 = 1000;
/// Longest long-poll wait of a claim.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// Most leases one wait may ask about.
pub const MAX_LEASE_WAIT: usize = 10_000;

/// Most tasks one list page may hold.
pub const MAX_LIST_LIMIT: usize = 1000;
/// Longest worker id, in bytes.
pub const MAX_WORKER_ID: usize = 256;

/// The result of enqueueing one task.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EnqueueOutcome {
    /// The task created, or the existing task its key matched.
    pub id: TaskId,
    /// True when the key matched a live or recently completed task: nothing
    /// was created and `id` is that task's.
    pub duplicate: bool,
}

/// A request for up to `max` ready tasks.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ClaimRequest {
    /// The queue to claim from; a paused or unknown one yields nothing.
    pub queue: QueueName,
    /// Who claims: 1 to [`MAX_WORKER_ID`] bytes, recorded as the lease's owner.
    pub worker: String,
    /// At most this many tasks, 1 to [`MAX_CLAIM`].
    pub max: u32,
    /// Defaults to the queue's lease; a task's own `lease_ms` wins.
    pub lease: Option<Duration>,
    /// Long poll: block until a task is ready or this much time has passed.
    pub wait: Duration,
}

impl ClaimRequest {
    /// One task from `queue` for `worker`, on the queue's lease, without
    /// waiting.
    pub fn new(queue: QueueName, worker: impl Into<String>) -> Self {
        ClaimRequest {
            queue,
            worker: worker.into(),
            max: 1,
            lease: None,
            wait: Duration::ZERO,
        }
    }

    /// Takes up to `max` tasks (1 to [`MAX_CLAIM`]).
    pub fn max(mut self, max: u32) -> Self {
        self.max = max;
        self
    }

    /// Asks for this lease instead of the queue's; a task's own `lease_ms`
    /// still wins.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Long-polls for up to `wait` (at most [`MAX_WAIT`]) when nothing is
    /// ready.
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// Out-of-range values are refused, never clamped (docs/spec.md §7.1).
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.worker.is_empty() || self.worker.len() > MAX_WORKER_ID {
            return Err(StoreError::bad_request(format!(
                "worker must be 1 to {MAX_WORKER_ID} bytes"
            )));
        }
        if self.max == 0 || self.max > MAX_CLAIM {
            return Err(StoreError::bad_request(format!(
                "max must be between 1 and {MAX_CLAIM}"
            )));
        }
        if self.wait > MAX_WAIT {
            return Err(StoreError::bad_request("wait_ms must be at most 30000"));
        }
        if self.lease.is_some_and(|l| l.is_zero()) {
            return Err(StoreError::bad_request("lease_ms must be at least 1"));
        }
        Ok(())
    }
}

/// How a failed attempt is recorded.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct FailRequest {
    /// Recorded in the task's errors, cut to
    /// [`MAX_ERROR_MESSAGE`](crate::transition::MAX_ERROR_MESSAGE) bytes.
    pub message: String,
    /// Retry at this time instead of after the backoff.
    pub retry_at: Option<Timestamp>,
    /// Dead at once, whatever attempts remain.
    pub discard: bool,
}

impl FailRequest {
    /// A failure with `message`, retried after the queue's backoff while
    /// attempts remain.
    pub fn new(message: impl Into<String>) -> Self {
        FailRequest {
            message: message.into(),
            ..FailRequest::default()
        }
    }
}

/// A live task, addressed by its id or by its queue and idempotency key.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum TaskRef {
    /// By the id the store assigned.
    Id(TaskId),
    /// By the idempotency key the producer chose, unique in its queue.
    Key(QueueName, TaskKey),
}

impl From<TaskId> for TaskRef {
    fn from(id: TaskId) -> Self {
        TaskRef::Id(id)
    }
}

/// Fields an `update` may change (only while the task is not leased).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct TaskPatch {
    /// A new payload, held against the queue's `max_payload`.
    pub payload: Option<Payload>,
    /// A new time to run: the task becomes scheduled or ready accordingly (a
    /// dead task stays dead).
    pub run_at: Option<Timestamp>,
    /// A new priority; lower runs first.
    pub priority: Option<i16>,
}

/// The order of a list.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum ListOrder {
    /// Oldest id first.
    #[default]
    Id,
    /// Most attempts first, then id: where an operator looks in a crisis.
    AttemptsDesc,
}

/// One page of a queue's tasks.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ListRequest {
    /// The queue to list; an unknown one lists nothing.
    pub queue: QueueName,
    /// Only tasks in this state; every state when `None`.
    pub state: Option<TaskState>,
    /// The order of the tasks, across pages too.
    pub order: ListOrder,
    /// At most this many tasks on the page, 1 to [`MAX_LIST_LIMIT`].
    pub limit: usize,
    /// Opaque, from the previous page's `next_cursor`.
    pub cursor: Option<String>,
}

impl ListRequest {
    /// The first page of 100 of every task of `queue`, by id.
    pub fn new(queue: QueueName) -> Self {
        ListRequest {
            queue,
            state: None,
            order: ListOrder::Id,
            limit: 100,
            cursor: None,
        }
    }

    /// Refuses a `limit` outside 1 to [`MAX_LIST_LIMIT`] rather than clamping
    /// it.
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.limit == 0 || self.limit > MAX_LIST_LIMIT {
            return Err(StoreError::bad_request(format!(
                "limit must be between 1 and {MAX_LIST_LIMIT}"
            )));
        }
        Ok(())
    }
}

/// A page of tasks and where the next page starts.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TaskPage {
    /// At most the request's `limit` tasks, in its order.
    pub tasks: Vec<Task>,
    /// The `cursor` of the next page; `None` on the last one.
    pub next_cursor: Option<String>,
}

/// Task counts per state.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct StateCounts {
    /// Tasks whose `run_at` is still ahead.
    pub scheduled: u64,
    /// Tasks claimable now.
    pub ready: u64,
    /// Tasks under a lease that has not expired.
    pub leased: u64,
    /// Tasks out of attempts or discarded.
    pub dead: u64,
    /// Tasks waiting for others to end (docs/spec.md §3.2).
    pub pending: u64,
}

impl StateCounts {
    /// The count of tasks in state `s`.
    pub fn get(&self, s: TaskState) -> u64 {
        match s {
            TaskState::Scheduled => self.scheduled,
            TaskState::Ready => self.ready,
            TaskState::Leased => self.leased,
            TaskState::Dead => self.dead,
            TaskState::Pending => self.pending,
        }
    }

    /// The counter of state `s`, for tallying tasks one at a time.
    pub fn slot(&mut self, s: TaskState) -> &mut u64 {
        match s {
            TaskState::Scheduled => &mut self.scheduled,
            TaskState::Ready => &mut self.ready,
            TaskState::Leased => &mut self.leased,
            TaskState::Dead => &mut self.dead,
            TaskState::Pending => &mut self.pending,
        }
    }

    /// Every task counted, whatever its state.
    pub fn total(&self) -> u64 {
        self.scheduled + self.ready + self.leased + self.dead + self.pending
    }
}

/// Counts per kind.
pub type KindCounts = BTreeMap<Kind, StateCounts>;

/// What `stats` reports for one queue.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct QueueStats {
    /// The queue these figures are for.
    pub name: QueueName,
    /// Whether the queue hands out nothing for now.
    pub paused: bool,
    /// The queue's tasks per state, as derived from the store's clock.
    pub counts: StateCounts,
    /// The same counts split by kind; a kind with no task left may appear
    /// with zeros or not at all.
    pub kinds: KindCounts,
    /// How long the longest-waiting ready task has been claimable.
    pub oldest_ready_age: Option<Duration>,
    /// The whole tokens left now in the bucket of the queue's `rate_limit`:
    /// the most tasks claims may take before it refills. `None` without a
    /// rate limit.
    pub rate_tokens: Option<u32>,
}

/// Where tasks are kept. See the module docs for the guarantees.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates tasks atomically (all or none). For a key that is live or
    /// within the dedup window, returns the existing id with `duplicate`.
    async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError>;

    /// Leases up to `max` ready tasks in (priority, run_at, id) order.
    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError>;

    /// Completes (deletes) the task, handing a result, if any, to the tasks
    /// waiting for it; or re-arms it as scheduled with `attempt = 0`
    /// ([`Ack`]).
    async fn ack(&self, id: TaskId, token: LeaseToken, ack: Ack) -> Result<(), StoreError>;

    /// Acks many tasks as [`Ack::Done`]; each item succeeds or fails on its
    /// own.
    async fn ack_many(
        &self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError>;

    /// Records a failure: retried later, or dead.
    async fn fail(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError>;

    /// Gives a task back unrun: ready, and the attempt is not counted.
    async fn release(&self, id: TaskId, token: LeaseToken) -> Result<(), StoreError>;

    /// Gives a task back to run at `run_at`, not counting the attempt.
    async fn snooze(
        &self,
        id: TaskId,
        token: LeaseToken,
        run_at: Timestamp,
    ) -> Result<Task, StoreError>;

    /// Heartbeat: the lease now expires `lease` from now.
    async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError>;

    /// Changes payload, run_at or priority of a task that is not leased.
    async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError>;

    /// Deletes a task in any state. A worker waiting on its lease
    /// ([`Store::wait_leases_lost`]) learns of it within 100 ms.
    async fn cancel(&self, task: TaskRef) -> Result<(), StoreError>;

    /// The ids of the leases among `leases` that are no longer held (the
    /// task is gone, its lease ran out, or another token holds it now), in
    /// request order. Answers at once when there are some; otherwise waits
    /// up to `wait` and answers as soon as one is lost, empty when none
    /// was (docs/spec.md §3). A cancel reaches a waiter within 100 ms;
    /// other losses within [`RECHECK`](crate::lease_wait::RECHECK). 1 to
    /// [`MAX_LEASE_WAIT`] leases, a
    /// wait of at most [`MAX_WAIT`]; anything else is `bad_request`.
    ///
    /// The default looks with one `get` per lease every 50 ms: correct on
    /// any store, and cheap only for a few leases; stores override it with
    /// one look per wake-up.
    async fn wait_leases_lost(
        &self,
        leases: &[(TaskId, LeaseToken)],
        wait: Duration,
    ) -> Result<Vec<TaskId>, StoreError> {
        validate_lease_wait(leases.len(), wait)?;
        crate::lease_wait::wait_until_lost(None, crate::lease_wait::DEFAULT_POLL, wait, || {
            lost_by_get(self, leases)
        })
        .await
    }

    /// The task as it is now; `not_found` once it is completed or cancelled.
    async fn get(&self, task: TaskRef) -> Result<Task, StoreError>;

    /// A dead task becomes ready with `attempt = 0`.
    async fn retry(&self, id: TaskId) -> Result<Task, StoreError>;

    /// Every dead task of the queue becomes ready; returns how many.
    async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError>;

    /// One page of a queue's tasks; follow `next_cursor` for the rest.
    async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError>;

    /// Every queue, by name.
    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError>;

    /// The queue's groups that have tasks waiting or leased, most waiting
    /// first, then most leased, then by name; at most `limit` (1 to
    /// [`crate::groups::MAX_GROUP_STATS`]) of them. An unknown queue has
    /// none.
    async fn groups(&self, queue: &QueueName, limit: usize) -> Result<Vec<GroupStats>, StoreError>;

    /// Creates the queue (defaults for absent fields) or changes only the
    /// fields given, atomically with respect to every other change of the
    /// queue, pause and resume included, across all processes on a store:
    /// nothing another change wrote in between is lost (docs/spec.md §4).
    /// The result is checked as a whole; a refused change changes, and
    /// creates, nothing. Answers the settings now in force.
    async fn put_queue(
        &self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError>;

    /// The queue's settings; `not_found` for a queue nobody created.
    async fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError>;

    /// Pauses or resumes the queue; `not_found` for a queue nobody created.
    /// A paused queue hands out nothing; everything else still works on it.
    async fn set_paused(&self, queue: &QueueName, paused: bool) -> Result<(), StoreError>;

    /// The store's clock: the only clock tasks are judged by.
    async fn now(&self) -> Result<Timestamp, StoreError>;

    /// Creates or replaces a schedule. Replacing keeps its firing state.
    async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        let _ = spec;
        Err(schedules_unsupported())
    }

    /// Every schedule, by name.
    async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        Err(schedules_unsupported())
    }

    /// Deletes a schedule; its tasks already enqueued stay.
    async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        let _ = name;
        Err(schedules_unsupported())
    }

    /// A signal that the schedule list changed, so a scheduler notices a
    /// new, changed or deleted schedule at once instead of at its next
    /// poll. The receiver sees a change after every put and delete of a
    /// schedule made through this store (on a shared database, by any
    /// process). `None`: the store cannot tell, and schedulers poll only.
    fn schedule_changes(&self) -> Option<tokio::sync::watch::Receiver<()>> {
        None
    }

    /// Fires `tick` of schedule `name` unless it (or a later tick) was
    /// already fired: atomically records the tick and enqueues its task
    /// (key `sched:<name>:<tick>`, `lease_ms` = the deadline). `None` when
    /// another process fired it first. This is what makes a tick fire once
    /// however many processes run the scheduler.
    async fn fire_schedule(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        let _ = (name, tick);
        Err(schedules_unsupported())
    }
}

/// What a store that keeps no schedules answers to schedule calls.
/// The default implementation's look: one `get` per lease.
async fn lost_by_get<S: Store + ?Sized>(
    store: &S,
    leases: &[(TaskId, LeaseToken)],
) -> Result<Vec<TaskId>, StoreError> {
    let mut lost = Vec::new();
    for &(id, token) in leases {
        let held = match store.get(id.into()).await {
            Ok(task) => {
                task.state == TaskState::Leased && task.lease.is_some_and(|l| l.token == token)
            }
            Err(StoreError::NotFound) => false,
            Err(e) => return Err(e),
        };
        if !held {
            lost.push(id);
        }
    }
    Ok(lost)
}

fn schedules_unsupported() -> StoreError {
    StoreError::Unavailable("this store does not keep schedules".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_waits_are_refused() {
        let code = |n, w| validate_lease_wait(n, w).map_err(|e| e.code());
        assert_eq!(code(1, MAX_WAIT), Ok(()));
        assert_eq!(code(MAX_LEASE_WAIT, Duration::ZERO), Ok(()));
        assert_eq!(code(0, Duration::ZERO), Err("bad_request"));
        assert_eq!(code(MAX_LEASE_WAIT + 1, Duration::ZERO), Err("bad_request"));
        let over = MAX_WAIT + Duration::from_millis(1);
        assert_eq!(code(1, over), Err("bad_request"));
    }

    #[test]
    fn a_batch_holds_one_to_max_batch_valid_tasks() {
        let code = |tasks: &[NewTask]| validate_batch(tasks).map_err(|e| e.code());
        assert_eq!(code(&[]), Err("bad_request"));
        assert_eq!(code(&vec![NewTask::default(); MAX_BATCH]), Ok(()));
        assert_eq!(
            code(&vec![NewTask::default(); MAX_BATCH + 1]),
            Err("bad_request")
        );
        let one_bad = [NewTask::default(), NewTask::default().max_attempts(0)];
        assert_eq!(code(&one_bad), Err("bad_request"));
    }
}
