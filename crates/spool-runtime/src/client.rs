//! The producer side: enqueue typed jobs, set and remove periodic
//! schedules. Jobs enqueued together, waiting for one another, are
//! `batch`'s; what a producer does to tasks and queues once they exist
//! (cancel, pause, limits) is `control`'s.

use std::sync::Arc;
use std::time::Duration;

use spool_core::{
    EnqueueOutcome, Kind, NewTask, Parent, ParentFailure, Schedule, ScheduleSpec, Store,
    StoreError, TaskGroup, TaskId, TaskKey, Timestamp,
};

use crate::error::EnqueueError;
use crate::job::{self, Job};
use crate::periodic::PeriodicJob;

/// Enqueues jobs into a store. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    store: Arc<dyn Store>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

/// How one job is enqueued: when, in which order, under which key, in
/// which group, after which other tasks.
#[derive(Clone, Debug, Default)]
pub struct EnqueueOptions {
    task: NewTask,
    key: Option<String>,
    group: Option<String>,
    /// As set; unset, `cancel`, except for a batch's callback (`run`).
    if_parent_fails: Option<ParentFailure>,
}

impl EnqueueOptions {
    /// Run now, priority 0, no key, the queue's attempts and lease.
    pub fn new() -> Self {
        Self::default()
    }

    /// Not claimable before this much time has passed on the store's clock.
    pub fn delay(mut self, d: Duration) -> Self {
        self.task = self.task.delay(d);
        self
    }

    /// Not claimable before this store time.
    pub fn run_at(mut self, at: Timestamp) -> Self {
        self.task = self.task.run_at(at);
        self
    }

    /// Lower runs first; default 0.
    pub fn priority(mut self, p: i16) -> Self {
        self.task = self.task.priority(p);
        self
    }

    /// An idempotency key: while a task with it lives in the queue (and for
    /// the dedup window after), enqueueing again creates nothing.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Attempts before the task goes dead; default the queue's.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.task = self.task.max_attempts(n);
        self
    }

    /// The task's own lease (its time to run), whatever workers ask for.
    pub fn lease(mut self, d: Duration) -> Self {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.task = self.task.lease_ms(ms);
        self
    }

    /// The producer's W3C trace context, which the task's runs join (with
    /// the `otel` feature, `otel::current_traceparent` gives the current
    /// span's); a malformed one makes the enqueue fail with `bad_request`.
    pub fn traceparent(mut self, traceparent: impl Into<String>) -> Self {
        self.task = self.task.traceparent(traceparent);
        self
    }

    /// The group the task belongs to in its queue (a customer, an API
    /// host; 1–128 bytes): claims take from a queue's groups in turn, and
    /// its `group_concurrency` bounds each group's tasks leased at once. A
    /// malformed one makes the enqueue fail with a name error.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// Makes the task wait for the task `parent` (in any queue) to end:
    /// it is pending, claimed by no one, until every parent named has
    /// completed, died or been cancelled (docs/spec.md §3.2). An id the
    /// store never assigned makes the enqueue fail with `bad_request`.
    pub fn after(mut self, parent: TaskId) -> Self {
        self.task = self.task.after(Parent::Task(parent));
        self
    }

    /// Makes the task wait for the task at `position` of the same
    /// [`Batch`](crate::Batch) (counting from 0, in the order added),
    /// which must come before it: parents come first. The batch is one
    /// atomic enqueue, so the task and its parents are created together
    /// or not at all (docs/spec.md §3.2). A position that is not before
    /// the task's own makes the batch fail with
    /// [`EnqueueError::Batch`], and so does any position given to
    /// [`Client::enqueue_with`], which has no batch.
    pub fn after_in_batch(mut self, position: usize) -> Self {
        // Past u32::MAX is past any batch (at most 10,000 tasks), and is
        // refused as such.
        let at = u32::try_from(position).unwrap_or(u32::MAX);
        self.task = self.task.after(Parent::InBatch(at));
        self
    }

    /// What a parent ending dead or cancelled does to the task: cancel it
    /// too (the default, and its own dependents in turn), or let it run
    /// once every parent has ended, as a batch's callback does (the
    /// default for [`Batch::callback`](crate::Batch::callback)); its
    /// handler reads how they ended from [`crate::Context::deps`].
    pub fn if_parent_fails(mut self, policy: ParentFailure) -> Self {
        self.if_parent_fails = Some(policy);
        self
    }

    /// Makes the task wait for every task before `position` of its batch,
    /// with policy `run` unless one was set: what a batch's callback is.
    pub(crate) fn after_all_before(mut self, position: usize) -> Self {
        let end = u32::try_from(position).unwrap_or(u32::MAX);
        self.task.after.extend((0..end).map(Parent::InBatch));
        self.if_parent_fails.get_or_insert(ParentFailure::Run);
        self
    }

    pub(crate) fn into_task<J: Job>(self, job: &J, kind: &Kind) -> Result<NewTask, EnqueueError> {
        let mut task = self.task;
        task.if_parent_fails = self.if_parent_fails.unwrap_or_default();
        task.payload = job::encode(job)?;
        task.kind = Some(kind.clone());
        if let Some(key) = self.key {
            task.key = Some(TaskKey::new(key)?);
        }
        if let Some(group) = self.group {
            task.group = Some(TaskGroup::new(group)?);
        }
        Ok(task)
    }
}

fn one(mut outcomes: Vec<EnqueueOutcome>) -> Result<EnqueueOutcome, EnqueueError> {
    match (outcomes.pop(), outcomes.is_empty()) {
        (Some(o), true) => Ok(o),
        _ => Err(EnqueueError::Store(StoreError::Internal(
            "the store answered a one-task enqueue with another number of results".into(),
        ))),
    }
}

impl Client {
    /// A client that enqueues into `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Client { store }
    }

    /// The store it enqueues into, for what the typed calls do not cover.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Enqueues `job` to run now. Durable when this returns.
    pub async fn enqueue<J: Job>(&self, job: J) -> Result<EnqueueOutcome, EnqueueError> {
        self.enqueue_with(job, EnqueueOptions::new()).await
    }

    /// Enqueues `job` with a delay, priority, key, ...
    pub async fn enqueue_with<J: Job>(
        &self,
        job: J,
        options: EnqueueOptions,
    ) -> Result<EnqueueOutcome, EnqueueError> {
        let (queue, kind) = job::names::<J>()?;
        let task = options.into_task(&job, &kind)?;
        if task.after.iter().any(|p| matches!(p, Parent::InBatch(_))) {
            return Err(EnqueueError::Batch {
                position: 0,
                reason: "it waits for a position of its batch (after_in_batch), and a single \
                         enqueue has no task before it: enqueue both in one Client::batch"
                    .into(),
            });
        }
        one(self.store.enqueue(&queue, vec![task]).await?)
    }

    /// Enqueues many jobs of one type atomically: all or none. At most
    /// 10,000 per call. Jobs with options, of several types, or waiting
    /// for one another go in a [`Client::batch`].
    pub async fn enqueue_many<J: Job>(
        &self,
        jobs: impl IntoIterator<Item = J>,
    ) -> Result<Vec<EnqueueOutcome>, EnqueueError> {
        let (queue, kind) = job::names::<J>()?;
        let tasks = jobs
            .into_iter()
            .map(|j| EnqueueOptions::new().into_task(&j, &kind))
            .collect::<Result<Vec<_>, _>>()?;
        if tasks.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self.store.enqueue(&queue, tasks).await?)
    }

    /// Creates or replaces a schedule. Some process must run a
    /// [`crate::Scheduler`] against the store for it to fire.
    pub async fn put_schedule<J: Job>(
        &self,
        periodic: PeriodicJob<J>,
    ) -> Result<Schedule, EnqueueError> {
        let spec: ScheduleSpec = periodic.into_spec()?;
        Ok(self.store.put_schedule(spec).await?)
    }

    /// Every schedule of the store, by name, with its firing state.
    pub async fn schedules(&self) -> Result<Vec<Schedule>, EnqueueError> {
        Ok(self.store.list_schedules().await?)
    }

    /// Removes a schedule; tasks it already enqueued stay.
    pub async fn delete_schedule(&self, name: &str) -> Result<(), EnqueueError> {
        Ok(self.store.delete_schedule(&Kind::new(name)?).await?)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Fetch;

    impl Job for Fetch {
        const KIND: &'static str = "fetch";
    }

    #[test]
    fn options_put_the_task_in_its_group() {
        let kind = Kind::new("fetch").unwrap();
        let task = EnqueueOptions::new()
            .group("api.example.com")
            .into_task(&Fetch, &kind)
            .unwrap();
        assert_eq!(task.group.unwrap().as_str(), "api.example.com");
        let plain = EnqueueOptions::new().into_task(&Fetch, &kind).unwrap();
        assert_eq!(plain.group, None);
        assert!(matches!(
            EnqueueOptions::new().group("").into_task(&Fetch, &kind),
            Err(EnqueueError::Name(_))
        ));
    }
}
