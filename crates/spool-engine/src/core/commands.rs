//! The Store operations as the core thread runs them.
//!
//! Each one validates against memory first and changes nothing on error;
//! then it builds one absolute [`Op`], commits it (log + memory) and shapes
//! the answer. Validation that needs no state lives in spool-core.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use spool_core::deps::{self, Ending, Outcome};
use spool_core::groups::GroupStats;
use spool_core::schedule::tick_key;
use spool_core::task::RunAt;
use spool_core::transition::{self, after_failure, after_lease_expiry, lease_for, LEASE_EXPIRED};
use spool_core::{
    backoff, Ack, ClaimRequest, EnqueueOutcome, FailRequest, Kind, LeaseToken, ListRequest,
    NewTask, Parent, QueueChange, QueueName, QueueSettings, QueueStats, Schedule, ScheduleSpec,
    StoreError, TaskId, TaskKey, TaskPatch, TaskRef, TaskResult, TaskState, Timestamp,
};

use super::waiters::{ClaimReply, Waiter};
use super::Core;
use crate::ops::{Claimed, Failure, NewDeps, NewEntry, Next, Op, Settlement};
use crate::state::TaskView;

/// Tasks per settle record when many change at once.
const SETTLE_SLICE: usize = 4096;
/// Ids per delete record (8 bytes each: far below the record limit).
const DELETE_SLICE: usize = 1 << 20;
/// Most pending tasks that may wait for one task: what its ending does to
/// them goes in the one log record that ends it (21 bytes each).
const MAX_WAITING: usize = 100_000;

/// Refuses a parent named by an id this store has not assigned before the
/// batch (`first_id` is the batch's first).
fn check_named_parents(after: &[Parent], first_id: TaskId) -> Result<(), StoreError> {
    let named: Vec<TaskId> = after
        .iter()
        .filter_map(|p| match p {
            Parent::Task(id) => Some(*id),
            Parent::InBatch(_) => None,
        })
        .collect();
    deps::check_assigned(&named, first_id)
}

fn next_of(n: transition::Next) -> Next {
    match n {
        transition::Next::RetryAt(at) => Next::Waiting(at),
        transition::Next::Dead => Next::Dead,
    }
}

impl Core {
    pub(crate) fn enqueue(
        &mut self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        spool_core::store::validate_batch(&tasks)?;
        let now = self.now();
        let q = self.state.queue_of(queue);
        if q.is_none() && self.settings.strict_queues {
            return Err(StoreError::QueueNotFound(queue.clone()));
        }
        let default_kind = Kind::from(queue);
        let kinds = tasks
            .iter()
            .map(|t| t.kind.as_ref().unwrap_or(&default_kind));
        self.state.admit(queue, kinds)?;
        let defaults = QueueSettings::default();
        let settings = q.map_or(&defaults, |q| &self.state.queue(q).settings);
        // What the record will take: per task its payload, key and kind
        // (the queue's name when it has none) plus the fixed fields (44
        // bytes, rounded up) and its parents (each at most twice: named,
        // and still awaited), and the record's own header and queue name.
        let encoded: usize = tasks
            .iter()
            .map(|t| {
                t.payload.len()
                    + t.key.as_ref().map_or(0, |k| k.as_str().len())
                    + t.kind
                        .as_ref()
                        .map_or(queue.as_str().len(), |k| k.as_str().len())
                    + 64
                    + 16 * t.after.len()
            })
            .sum::<usize>()
            + 256
            + queue.as_str().len();
        if encoded > spool_wal::MAX_RECORD_LEN {
            // One request is one log record; a record past the log's limit
            // would fail its write and stop the engine.
            return Err(StoreError::bad_request(format!(
                "this batch's payloads take {encoded} bytes; a batch holds at most {} \
                 (split it)",
                spool_wal::MAX_RECORD_LEN
            )));
        }
        let first_id = self.state.next_id;
        for t in &tasks {
            check_named_parents(&t.after, TaskId(first_id))?;
        }
        let mut next_id = first_id;
        let mut outcomes: Vec<EnqueueOutcome> = Vec::with_capacity(tasks.len());
        let mut entries = Vec::with_capacity(tasks.len());
        let mut batch_keys: HashMap<TaskKey, u64> = HashMap::new();
        let mut cancelled_here: Vec<u64> = Vec::new();
        // Each position's id so far, for parents named by position.
        let mut batch_ids: Vec<TaskId> = Vec::with_capacity(tasks.len());
        for t in tasks {
            let size = t.payload.len() as u64;
            if size > settings.max_payload {
                return Err(StoreError::PayloadTooLarge {
                    size,
                    max: settings.max_payload,
                });
            }
            if let Some(key) = &t.key {
                let existing = batch_keys
                    .get(key)
                    .copied()
                    .or_else(|| q.and_then(|q| self.state.queue(q).keys.dedup(key, now)));
                if let Some(id) = existing {
                    outcomes.push(EnqueueOutcome {
                        id: TaskId(id),
                        duplicate: true,
                    });
                    batch_ids.push(TaskId(id));
                    continue;
                }
                batch_keys.insert(key.clone(), next_id);
            }
            let run_at = match t.run_at {
                RunAt::Now => now,
                RunAt::At(at) => at,
                RunAt::After(d) => now.plus(d),
            };
            let deps = self.new_deps(&t, &batch_ids, first_id, &cancelled_here)?;
            if deps.as_ref().is_some_and(|d| d.cancelled) {
                cancelled_here.push(next_id);
            }
            outcomes.push(EnqueueOutcome {
                id: TaskId(next_id),
                duplicate: false,
            });
            batch_ids.push(TaskId(next_id));
            entries.push(NewEntry {
                id: next_id,
                kind: t.kind.unwrap_or_else(|| Kind::from(queue)),
                payload: t.payload,
                priority: t.priority,
                run_at,
                key: t.key,
                max_attempts: t.max_attempts.unwrap_or(settings.max_attempts),
                lease_ms: t.lease_ms,
                traceparent: t.traceparent,
                group: t.group,
                deps,
            });
            next_id += 1;
        }
        if !entries.is_empty() {
            let op = Op::Enqueue {
                now,
                queue: queue.clone(),
                tasks: entries,
            };
            self.commit_ref(&op);
            let wanted = self.waiters.wanted(queue);
            if let (Op::Enqueue { tasks, .. }, true) = (op, wanted > 0) {
                // A waiting claim takes from the front, where a queue that
                // had waiters (it was empty) now has these tasks.
                self.keep_fresh(tasks.into_iter().take(wanted));
            }
        }
        Ok(outcomes)
    }

    /// Claims now, or parks the request as a long poll.
    pub(crate) fn claim(&mut self, req: ClaimRequest, reply: ClaimReply) {
        let admitted = self
            .refuse_if_poisoned()
            .and_then(|()| req.validate())
            .and_then(|()| self.refuse_if_full());
        if let Err(e) = admitted {
            self.respond(Err(e), reply);
            return;
        }
        let q = self.state.queue_of(&req.queue);
        let tasks = match q {
            Some(q) => self.claim_now(q, &req.worker, req.max, req.lease),
            None => Vec::new(),
        };
        if tasks.is_empty() && !req.wait.is_zero() {
            if let Some(q) = q {
                self.watch_refill(q);
            }
            let deadline = Instant::now() + req.wait;
            let waiter = Waiter {
                worker: req.worker,
                max: req.max,
                lease: req.lease,
                reply,
            };
            self.waiters.park(req.queue, waiter, deadline);
            return;
        }
        self.respond(Ok(tasks), reply);
    }

    /// Leases up to `max` tasks from the front of the queue's ready order.
    fn claim_now(
        &mut self,
        q: u32,
        worker: &str,
        max: u32,
        lease: Option<Duration>,
    ) -> Vec<TaskView> {
        let now = self.now();
        let queue = self.state.queue_mut(q);
        if queue.settings.paused {
            return Vec::new();
        }
        let default_lease = queue.settings.lease;
        let allowed = queue.allowance(now).min(max);
        if allowed == 0 {
            if queue.counts.ready > 0 {
                metrics::counter!("spool_claims_throttled_total").increment(1);
            }
            return Vec::new();
        }
        let ids = self.state.claim_order(q, allowed as usize);
        let mut rng = rand::thread_rng();
        let claimed: Vec<Claimed> = ids
            .iter()
            .filter_map(|&id| {
                let e = self.state.tasks.get(id)?;
                let own = self.state.tasks.extra(id).and_then(|x| x.lease_ms);
                Some(Claimed {
                    id,
                    attempt: e.attempt.saturating_add(1),
                    token: rng.gen(),
                    expires_at: now.plus(lease_for(own, lease, default_lease)),
                })
            })
            .collect();
        if claimed.is_empty() {
            return Vec::new();
        }
        let took = u32::try_from(claimed.len()).unwrap_or(u32::MAX);
        self.state.queue_mut(q).took(took, now);
        self.commit(Op::Claim {
            now,
            owner: Arc::from(worker),
            tasks: claimed,
        });
        ids.into_iter()
            .filter_map(|id| self.state.view(id))
            .collect()
    }

    /// Checks that the task's lease under `token` is still valid now.
    fn valid_lease(&mut self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let now = self.now();
        self.valid_lease_at(id, token, now)
    }

    fn valid_lease_at(
        &self,
        id: TaskId,
        token: LeaseToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let lease = self.state.leased(id.0, token)?;
        if lease.expires_at > now {
            Ok(())
        } else {
            Err(StoreError::LeaseLost)
        }
    }

    /// Task `id`'s next failure, numbered after those it has recorded.
    fn failure(&self, id: u64, attempt: u32, message: String) -> Failure {
        let recorded = self.state.tasks.extra(id).map_or(0, |x| x.failures);
        Failure {
            attempt,
            number: Some(recorded + 1),
            message,
        }
    }

    fn settle_one(&mut self, s: Settlement) {
        let now = self.now();
        self.commit_settle(now, vec![s]);
    }

    /// Commits settlements, with what those that go dead do to the tasks
    /// waiting for them (docs/spec.md §3.2).
    fn commit_settle(&mut self, now: Timestamp, tasks: Vec<Settlement>) {
        let dead = tasks
            .iter()
            .filter(|s| s.next == Next::Dead)
            .map(|s| (s.id, Ending::Failed));
        let follow = self.state.follow(dead);
        self.commit(Op::Settle { now, tasks, follow });
    }

    /// Deletes tasks that ended as `ending` (acked: completed; cancelled:
    /// failed), with what that does to the tasks waiting for them; `result`
    /// is a single ack's result, logged only when a task waits for it.
    fn commit_delete(
        &mut self,
        now: Timestamp,
        ids: Vec<u64>,
        ending: Ending,
        result: Option<TaskResult>,
    ) {
        let follow = self.state.follow(ids.iter().map(|&id| (id, ending)));
        let results = match (result, ids.as_slice()) {
            (Some(r), &[id]) if !follow.is_empty() => vec![(id, r)],
            _ => Vec::new(),
        };
        self.commit(Op::Delete {
            now,
            ids,
            follow,
            results,
        });
    }

    /// A new task's dependencies: its parents resolved (positions in the
    /// batch to the ids `batch` holds for them) and how each stands now.
    /// Tasks of this batch (ids from `first_id` on) are live unless
    /// cancelled at enqueue. Refuses a parent that as many tasks as one
    /// may have wait for it already do ([`MAX_WAITING`]).
    fn new_deps(
        &self,
        t: &NewTask,
        batch: &[TaskId],
        first_id: u64,
        cancelled_here: &[u64],
    ) -> Result<Option<Box<NewDeps>>, StoreError> {
        if t.after.is_empty() {
            return Ok(None);
        }
        let after = deps::resolve(&t.after, batch);
        if let Some(p) = after
            .iter()
            .find(|p| self.state.waiting_for(p.0) >= MAX_WAITING)
        {
            return Err(StoreError::bad_request(format!(
                "{MAX_WAITING} tasks wait for task {p} already, the most one may have"
            )));
        }
        let settled = deps::at_enqueue(after, t.if_parent_fails, |p| {
            if p.0 < first_id {
                self.state.ending_of(p.0)
            } else if cancelled_here.contains(&p.0) {
                Some(Ending::Failed)
            } else {
                None
            }
        });
        Ok(settled.map(|(deps, outcome)| {
            Box::new(NewDeps {
                deps,
                cancelled: outcome == Outcome::Cancelled,
            })
        }))
    }

    fn view_or_missing(&self, id: u64) -> Result<TaskView, StoreError> {
        self.state
            .view(id)
            .ok_or_else(|| StoreError::Internal(format!("task {id} vanished during an update")))
    }

    pub(crate) fn ack(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        ack: Ack,
    ) -> Result<(), StoreError> {
        self.valid_lease(id, token)?;
        let result = match ack {
            Ack::Reschedule(at) => {
                self.settle_one(Settlement {
                    id: id.0,
                    attempt: 0,
                    next: Next::Waiting(at),
                    error: None,
                });
                return Ok(());
            }
            Ack::Done => None,
            Ack::Result(r) => Some(r),
        };
        let now = self.now();
        self.commit_delete(now, vec![id.0], Ending::Completed, result);
        Ok(())
    }

    pub(crate) fn ack_many(
        &mut self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let now = self.now();
        let mut ids = Vec::with_capacity(acks.len());
        let results = acks
            .into_iter()
            .map(|(id, token)| {
                let r = self.valid_lease_at(id, token, now);
                if r.is_ok() {
                    ids.push(id.0);
                }
                r
            })
            .collect();
        // The same ack twice in one call succeeds twice and deletes once.
        ids.sort_unstable();
        ids.dedup();
        // A library caller may ack millions at once: one record each slice,
        // so none outgrows the log's record limit.
        for slice in ids.chunks(DELETE_SLICE) {
            self.commit_delete(now, slice.to_vec(), Ending::Completed, None);
        }
        Ok(results)
    }

    pub(crate) fn fail(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<TaskView, StoreError> {
        self.valid_lease(id, token)?;
        let now = self.now();
        let (attempt, max_attempts, q) = match self.state.tasks.get(id.0) {
            Some(e) => (e.attempt, e.max_attempts, e.queue()),
            None => return Err(StoreError::NotFound),
        };
        let settings = &self.state.queue(q).settings;
        let delay = backoff::delay(attempt, settings.backoff_base, settings.backoff_max);
        let next = after_failure(attempt, max_attempts, req.discard, req.retry_at, now, delay);
        let message = transition::truncate_message(&req.message).to_string();
        let error = self.failure(id.0, attempt, message);
        self.settle_one(Settlement {
            id: id.0,
            attempt,
            next: next_of(next),
            error: Some(error),
        });
        self.view_or_missing(id.0)
    }

    /// Gives the task back without counting the attempt, to run at `run_at`.
    fn give_back(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        run_at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        self.valid_lease(id, token)?;
        let attempt = self
            .state
            .tasks
            .get(id.0)
            .map_or(0, |e| e.attempt.saturating_sub(1));
        let now = self.now();
        self.settle_one(Settlement {
            id: id.0,
            attempt,
            next: Next::Waiting(run_at.unwrap_or(now)),
            error: None,
        });
        Ok(())
    }

    pub(crate) fn release(&mut self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.give_back(id, token, None)
    }

    pub(crate) fn snooze(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        run_at: Timestamp,
    ) -> Result<TaskView, StoreError> {
        self.give_back(id, token, Some(run_at))?;
        self.view_or_missing(id.0)
    }

    pub(crate) fn extend(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<TaskView, StoreError> {
        if lease.is_zero() {
            return Err(StoreError::bad_request("lease_ms must be at least 1"));
        }
        self.valid_lease(id, token)?;
        let now = self.now();
        self.commit(Op::Extend {
            now,
            id: id.0,
            expires_at: now.plus(lease),
        });
        self.view_or_missing(id.0)
    }

    pub(crate) fn update(
        &mut self,
        task: TaskRef,
        patch: TaskPatch,
    ) -> Result<TaskView, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let id = self.state.find(&task)?;
        let (state, q) = match self.state.tasks.get(id) {
            Some(e) => (e.state, e.queue()),
            None => return Err(StoreError::NotFound),
        };
        if state == TaskState::Leased {
            return Err(StoreError::LeaseHeld);
        }
        if let Some(p) = &patch.payload {
            let max = self.state.queue(q).settings.max_payload;
            if p.len() as u64 > max {
                return Err(StoreError::PayloadTooLarge {
                    size: p.len() as u64,
                    max,
                });
            }
        }
        let now = self.now();
        self.commit(Op::Update { now, id, patch });
        self.view_or_missing(id)
    }

    pub(crate) fn cancel(&mut self, task: TaskRef) -> Result<(), StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let id = self.state.find(&task)?;
        let now = self.now();
        self.commit_delete(now, vec![id], Ending::Failed, None);
        Ok(())
    }

    /// The leases among `leases` not held now (docs/spec.md §3): a look
    /// that changes nothing.
    pub(crate) fn leases_lost(
        &mut self,
        leases: &[(TaskId, LeaseToken)],
    ) -> Result<Vec<TaskId>, StoreError> {
        self.refuse_if_poisoned()?;
        let now = self.now();
        Ok(leases
            .iter()
            .filter(|&&(id, token)| self.valid_lease_at(id, token, now).is_err())
            .map(|&(id, _)| id)
            .collect())
    }

    pub(crate) fn get(&self, task: TaskRef) -> Result<TaskView, StoreError> {
        self.refuse_if_poisoned()?;
        let id = self.state.find(&task)?;
        self.state.view(id).ok_or(StoreError::NotFound)
    }

    pub(crate) fn retry(&mut self, id: TaskId) -> Result<TaskView, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let state = self.state.tasks.get(id.0).map(|e| e.state);
        if state.is_none() {
            return Err(StoreError::NotFound);
        }
        if state != Some(TaskState::Dead) {
            return Err(StoreError::bad_request("only a dead task can be retried"));
        }
        let now = self.now();
        self.settle_one(Settlement {
            id: id.0,
            attempt: 0,
            next: Next::Waiting(now),
            error: None,
        });
        self.view_or_missing(id.0)
    }

    pub(crate) fn retry_dead(&mut self, queue: &QueueName) -> Result<u64, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let q = self
            .state
            .queue_of(queue)
            .ok_or_else(|| StoreError::QueueNotFound(queue.clone()))?;
        let now = self.now();
        let dead: Vec<u64> = self.state.queue(q).members[TaskState::Dead.index()]
            .iter()
            .copied()
            .collect();
        // One record per slice: a queue of millions of dead tasks must not
        // make one record over the log's size limit.
        for ids in dead.chunks(SETTLE_SLICE) {
            let tasks = ids
                .iter()
                .map(|&id| Settlement {
                    id,
                    attempt: 0,
                    next: Next::Waiting(now),
                    error: None,
                })
                .collect();
            self.commit_settle(now, tasks);
        }
        Ok(dead.len() as u64)
    }

    pub(crate) fn list(
        &self,
        req: ListRequest,
    ) -> Result<(Vec<TaskView>, Option<String>), StoreError> {
        self.refuse_if_poisoned()?;
        self.state.list(&req)
    }

    pub(crate) fn stats(&mut self) -> Result<Vec<QueueStats>, StoreError> {
        self.refuse_if_poisoned()?;
        let now = self.now();
        Ok(self.state.stats(now))
    }

    pub(crate) fn groups(
        &self,
        queue: &QueueName,
        limit: usize,
    ) -> Result<Vec<GroupStats>, StoreError> {
        self.refuse_if_poisoned()?;
        self.state.groups(queue, limit)
    }

    /// The change is applied here, on the core thread, to the settings in
    /// force: no other change of the queue can come in between.
    pub(crate) fn put_queue(
        &mut self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let current = self
            .state
            .queue_of(queue)
            .map_or_else(QueueSettings::default, |q| {
                self.state.queue(q).settings.clone()
            });
        let settings = change.apply(current)?;
        self.state.admit(queue, [])?;
        self.commit(Op::PutQueue {
            queue: queue.clone(),
            settings: settings.clone(),
        });
        Ok(settings)
    }

    pub(crate) fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError> {
        self.refuse_if_poisoned()?;
        self.state
            .queue_of(queue)
            .map(|q| self.state.queue(q).settings.clone())
            .ok_or_else(|| StoreError::QueueNotFound(queue.clone()))
    }

    pub(crate) fn set_paused(&mut self, queue: &QueueName, paused: bool) -> Result<(), StoreError> {
        if self.get_queue(queue)?.paused != paused {
            let change = QueueChange {
                paused: Some(paused),
                ..QueueChange::default()
            };
            self.put_queue(queue, change)?;
        }
        Ok(())
    }

    /// Expired leases: ready again (the attempt was counted at claim), or
    /// dead on the last attempt, with "lease expired" recorded.
    pub(super) fn expire_leases(&mut self, now: Timestamp) {
        if !self.can_write() {
            // Logged once there is room; reads derive the state meanwhile.
            return;
        }
        let ids = self.state.expired_leases(now, super::EXPIRY_SLICE);
        if ids.is_empty() {
            return;
        }
        let tasks = ids
            .into_iter()
            .filter_map(|id| Some((id, self.state.tasks.get(id)?)))
            .map(|(id, e)| {
                // Ready since the moment the lease ran out, however late the
                // core noticed: claim order and queue age stay exact.
                let expired_at = self
                    .state
                    .tasks
                    .extra(id)
                    .and_then(|x| x.lease.as_ref())
                    .map_or(now, |l| l.expires_at);
                Settlement {
                    id,
                    attempt: e.attempt,
                    next: next_of(after_lease_expiry(e.attempt, e.max_attempts, expired_at)),
                    error: Some(self.failure(id, e.attempt, LEASE_EXPIRED.to_string())),
                }
            })
            .collect();
        self.commit_settle(now, tasks);
    }

    /// Hands newly ready tasks to parked long polls, oldest waiter first.
    pub(super) fn serve_waiters(&mut self) {
        if !self.can_write() {
            return;
        }
        for q in std::mem::take(&mut self.state.woken) {
            self.state.queue_mut(q).woken = false;
            let name = self.state.queue(q).name.clone();
            while self.waiters.has_waiters(&name) {
                let now = self.last_now;
                let queue = self.state.queue_mut(q);
                if queue.settings.paused {
                    break;
                }
                if !self.state.claimable(q) {
                    // Woken again when a task becomes ready or a group's
                    // slot frees.
                    break;
                }
                let queue = self.state.queue_mut(q);
                if queue.allowance(now) == 0 {
                    // Woken again by a freed slot, or when tokens refill.
                    self.watch_refill(q);
                    break;
                }
                let Some(w) = self.waiters.pop(&name) else {
                    break;
                };
                let mut tasks = self.claim_now(q, &w.worker, w.max, w.lease);
                for t in &mut tasks {
                    let fresh = &mut self.fresh;
                    t.in_hand = fresh
                        .binary_search_by_key(&t.task.id.0, |(id, _)| *id)
                        .ok()
                        .map(|i| std::mem::take(&mut fresh[i].1));
                }
                self.respond(Ok(tasks), w.reply);
            }
        }
    }

    /// Keeps the payloads of tasks parked claims are about to get (up to
    /// [`super::FRESH_MAX_BYTES`] a turn).
    fn keep_fresh(&mut self, entries: impl Iterator<Item = NewEntry>) {
        for e in entries {
            if self.fresh_bytes + e.payload.len() > super::FRESH_MAX_BYTES {
                return;
            }
            self.fresh_bytes += e.payload.len();
            self.fresh.push((e.id, e.payload.bytes));
        }
    }

    /// When the rate limit of queue `q` allows nothing now, has its
    /// waiters served again once a token has refilled.
    fn watch_refill(&mut self, q: u32) {
        let now = self.last_now;
        if let Some(wait) = self.state.queue_mut(q).refill_in(now) {
            self.refills.watch(now.plus(wait), q);
        }
    }

    pub(super) fn expire_waiters(&mut self) {
        for w in self.waiters.take_expired(Instant::now()) {
            self.respond(Ok(Vec::new()), w.reply);
        }
    }
}

impl Core {
    pub(crate) fn put_schedule(&mut self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        spec.validate()?;
        let q = self.state.queue_of(&spec.queue);
        if q.is_none() && self.settings.strict_queues {
            return Err(StoreError::QueueNotFound(spec.queue.clone()));
        }
        let max = q.map_or(QueueSettings::default().max_payload, |q| {
            self.state.queue(q).settings.max_payload
        });
        if spec.payload.len() as u64 > max {
            return Err(StoreError::PayloadTooLarge {
                size: spec.payload.len() as u64,
                max,
            });
        }
        let now = self.now();
        let name = spec.name.clone();
        self.commit(Op::PutSchedule { now, spec });
        self.state
            .schedules
            .get(&name)
            .cloned()
            .ok_or_else(|| StoreError::Internal("schedule vanished after put".into()))
    }

    pub(crate) fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.refuse_if_poisoned()?;
        Ok(self.state.schedules.values().cloned().collect())
    }

    pub(crate) fn delete_schedule(&mut self, name: &Kind) -> Result<(), StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        if !self.state.schedules.contains_key(name) {
            return Err(StoreError::NotFound);
        }
        self.commit(Op::DeleteSchedule { name: name.clone() });
        Ok(())
    }

    /// Records `tick` and enqueues its task, unless it or a later tick was
    /// already fired (by any scheduler: they all come through here).
    pub(crate) fn fire_schedule(
        &mut self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let now = self.now();
        let schedule = self.state.schedules.get(name).ok_or(StoreError::NotFound)?;
        if schedule.last_fire_at.is_some_and(|last| last >= tick) {
            return Ok(None);
        }
        let spec = &schedule.spec;
        if tick > now.plus(MAX_EARLY_FIRE) {
            return Err(StoreError::bad_request("the tick is in the future"));
        }
        if tick <= schedule.created_at
            || spec
                .cadence
                .next_after(tick.minus(Duration::from_millis(1)))
                != Some(tick)
        {
            return Err(StoreError::bad_request("not a tick of this schedule"));
        }
        let q = self.state.queue_of(&spec.queue);
        if q.is_none() && self.settings.strict_queues {
            return Err(StoreError::QueueNotFound(spec.queue.clone()));
        }
        let max_attempts = q.map_or(QueueSettings::default().max_attempts, |q| {
            self.state.queue(q).settings.max_attempts
        });
        let kind = spec.kind.clone().unwrap_or_else(|| Kind::from(&spec.queue));
        self.state.admit(&spec.queue, [&kind])?;
        let key = tick_key(name, tick);
        let duplicate = q.and_then(|q| self.state.queue(q).keys.dedup(&key, now));
        let id = duplicate.unwrap_or(self.state.next_id);
        let task = duplicate.is_none().then(|| NewEntry {
            id,
            kind,
            payload: spec.payload.clone(),
            priority: 0,
            run_at: tick,
            key: Some(key),
            max_attempts,
            lease_ms: Some(u64::try_from(spec.deadline_at(tick).as_millis()).unwrap_or(u64::MAX)),
            traceparent: None,
            group: None,
            deps: None,
        });
        let queue = spec.queue.clone();
        self.commit(Op::Fire {
            now,
            name: name.clone(),
            tick,
            queue,
            task,
        });
        Ok(Some(EnqueueOutcome {
            id: TaskId(id),
            duplicate: duplicate.is_some(),
        }))
    }
}

/// How far ahead of the store's clock a tick may be fired: schedulers in
/// other processes estimate the store clock, and a little early is harmless
/// because the task's run_at is the tick itself.
const MAX_EARLY_FIRE: Duration = Duration::from_secs(1);
