//! The model's state machine: docs/spec.md §3 applied to plain maps, one operation at
//! a time under the caller's lock. Every operation first lets time pass
//! ([`State::tick`]), so expired leases are settled before anything looks.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use spool_core::deps::{self, Ending, Outcome};
use spool_core::groups::GroupStats;
use spool_core::schedule::tick_key;
use spool_core::store::{MAX_BATCH, MAX_LIST_LIMIT};
use spool_core::task::RunAt;
use spool_core::transition::{self, Next, LEASE_EXPIRED};
use spool_core::{
    backoff, Ack, ClaimRequest, EnqueueOutcome, FailRequest, Kind, KindCounts, Lease, LeaseToken,
    ListOrder, ListRequest, NewTask, Parent, Payload, QueueChange, QueueName, QueueSettings,
    QueueStats, Schedule, ScheduleSpec, StoreError, Task, TaskGroup, TaskId, TaskKey, TaskPage,
    TaskPatch, TaskRef, TaskResult, TaskState, Timestamp, TokenBucket, TraceParent,
};

/// Where a task waits in its queue's claim order.
type Slot = (QueueName, i16, Timestamp, TaskId);

/// What a key remembers: its task, and when that task completed.
struct KeyEntry {
    id: TaskId,
    gone_at: Option<Timestamp>,
}

#[derive(Default)]
pub(super) struct State {
    next_id: u64,
    next_token: u64,
    queues: BTreeMap<QueueName, QueueSettings>,
    /// Stored state is `Ready` for every task that waits for its run_at,
    /// `Leased` or `Dead`; `Scheduled` is derived on the way out.
    tasks: BTreeMap<TaskId, Task>,
    waiting: BTreeSet<Slot>,
    leases: BTreeSet<(Timestamp, TaskId)>,
    keys: HashMap<(QueueName, TaskKey), KeyEntry>,
    schedules: BTreeMap<Kind, Schedule>,
    /// Rate-limited queues' tokens, from their first claim on; a new or
    /// changed rate limit starts full.
    buckets: HashMap<QueueName, TokenBucket>,
    /// Each group's tokens under its queue's `group_rate_limit`, likewise.
    group_buckets: HashMap<(QueueName, String), TokenBucket>,
    /// The group each queue's last claim served last (`""`: the
    /// ungrouped tasks).
    last_turn: HashMap<QueueName, String>,
    /// Live tasks with a group: while there are none, a claim takes the
    /// front of the waiting order without looking at groups.
    grouped: usize,
}

fn slot(t: &Task) -> Slot {
    (t.queue.clone(), t.priority, t.run_at, t.id)
}

/// A task as callers see it at `now`.
fn view(t: &Task, now: Timestamp) -> Task {
    let mut t = t.clone();
    if t.state == TaskState::Ready && t.run_at > now {
        t.state = TaskState::Scheduled;
    }
    t
}

impl State {
    /// Settles every lease that has expired by `now`: ready again from the
    /// moment it expired (docs/spec.md §3), however late this looks.
    pub(super) fn tick(&mut self, now: Timestamp) {
        while let Some(&(expires, id)) = self.leases.first() {
            if expires > now {
                break;
            }
            self.leases.remove(&(expires, id));
            let t = self.tasks.get_mut(&id).expect("a leased task exists");
            t.lease = None;
            t.updated_at = now;
            transition::push_error(&mut t.errors, t.attempt, now, LEASE_EXPIRED);
            match transition::after_lease_expiry(t.attempt, t.max_attempts, expires) {
                Next::RetryAt(at) => {
                    t.state = TaskState::Ready;
                    t.run_at = at;
                    self.waiting.insert(slot(t));
                }
                Next::Dead => {
                    t.state = TaskState::Dead;
                    self.end(id, Ending::Failed, None, now);
                }
            }
        }
    }

    /// Tells the tasks waiting for `id` that it ended, handing them its
    /// result, and what follows from it down their chains (docs/spec.md
    /// §3.2).
    fn end(&mut self, id: TaskId, ending: Ending, result: Option<TaskResult>, now: Timestamp) {
        let mut ended = vec![(id, ending)];
        while let Some((parent, ending)) = ended.pop() {
            let waiting: Vec<TaskId> = self
                .tasks
                .values()
                .filter(|t| {
                    t.deps
                        .as_ref()
                        .is_some_and(|d| d.waiting_on.contains(&parent))
                })
                .map(|t| t.id)
                .collect();
            for child in waiting {
                let t = self.tasks.get_mut(&child).expect("a waiting task exists");
                let deps = t.deps.as_mut().expect("it has dependencies");
                let step = deps::on_parent_end(deps, parent, ending);
                if let (Some(r), true) = (&result, parent == id && step.is_some()) {
                    deps::keep_result(deps, parent, r.clone());
                }
                match step {
                    Some(Outcome::Released) => {
                        t.state = TaskState::Ready;
                        t.updated_at = now;
                        self.waiting.insert(slot(t));
                    }
                    Some(Outcome::Cancelled) => {
                        self.remove(child, now);
                        ended.push((child, Ending::Failed));
                    }
                    Some(Outcome::Pending) | None => t.updated_at = now,
                }
            }
        }
    }

    fn settings(&self, q: &QueueName) -> QueueSettings {
        self.queues.get(q).cloned().unwrap_or_default()
    }

    pub(super) fn enqueue(
        &mut self,
        q: &QueueName,
        tasks: Vec<NewTask>,
        now: Timestamp,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        if tasks.len() > MAX_BATCH {
            return Err(StoreError::bad_request("too many tasks in one batch"));
        }
        let settings = self.settings(q);
        for t in &tasks {
            check_payload(&t.payload, &settings)?;
            if t.max_attempts == Some(0) || t.lease_ms == Some(0) {
                return Err(StoreError::bad_request(
                    "max_attempts and lease_ms must be > 0",
                ));
            }
            if let Some(tp) = &t.traceparent {
                TraceParent::parse(tp)?;
            }
        }
        spool_core::store::validate_batch(&tasks)?;
        let next = TaskId(self.next_id + 1);
        for t in &tasks {
            let named: Vec<TaskId> = t
                .after
                .iter()
                .filter_map(|p| match p {
                    Parent::Task(id) => Some(*id),
                    Parent::InBatch(_) => None,
                })
                .collect();
            deps::check_assigned(&named, next)?;
        }
        self.queues.entry(q.clone()).or_insert(settings.clone());
        let mut out: Vec<EnqueueOutcome> = Vec::with_capacity(tasks.len());
        let mut cancelled_here: Vec<TaskId> = Vec::new();
        for t in tasks {
            if let Some(k) = &t.key {
                if let Some(entry) = self.keys.get(&(q.clone(), k.clone())) {
                    let live = entry
                        .gone_at
                        .is_none_or(|gone| gone.plus(settings.dedup_window) > now);
                    if live {
                        out.push(EnqueueOutcome {
                            id: entry.id,
                            duplicate: true,
                        });
                        continue;
                    }
                }
            }
            self.next_id += 1;
            let id = TaskId(self.next_id);
            let run_at = match t.run_at {
                RunAt::Now => now,
                RunAt::At(at) => at,
                RunAt::After(d) => now.plus(d),
            };
            let batch: Vec<TaskId> = out.iter().map(|o| o.id).collect();
            let after = deps::resolve(&t.after, &batch);
            let settled =
                deps::at_enqueue(after, t.if_parent_fails, |p| match self.tasks.get(&p) {
                    _ if cancelled_here.contains(&p) => Some(Ending::Failed),
                    None => Some(Ending::Completed),
                    Some(parent) if parent.state == TaskState::Dead => Some(Ending::Failed),
                    Some(_) => None,
                });
            let (deps, outcome) = match settled {
                Some((d, o)) => (Some(Box::new(d)), Some(o)),
                None => (None, None),
            };
            let state = match outcome {
                Some(Outcome::Pending) => TaskState::Pending,
                _ => TaskState::Ready,
            };
            let task = Task {
                id,
                queue: q.clone(),
                kind: t.kind.unwrap_or_else(|| Kind::from(q)),
                payload: t.payload,
                priority: t.priority,
                run_at,
                key: t.key.clone(),
                attempt: 0,
                max_attempts: t.max_attempts.unwrap_or(settings.max_attempts),
                lease_ms: t.lease_ms,
                state,
                lease: None,
                errors: Vec::new(),
                created_at: now,
                updated_at: now,
                traceparent: t.traceparent,
                group: t.group,
                deps,
            };
            if let Some(k) = t.key {
                self.keys
                    .insert((q.clone(), k), KeyEntry { id, gone_at: None });
            }
            if state == TaskState::Ready {
                self.waiting.insert(slot(&task));
            }
            self.grouped += usize::from(task.group.is_some());
            self.tasks.insert(id, task);
            if outcome == Some(Outcome::Cancelled) {
                self.remove(id, now);
                cancelled_here.push(id);
            }
            out.push(EnqueueOutcome {
                id,
                duplicate: false,
            });
        }
        Ok(out)
    }

    pub(super) fn claim(&mut self, req: &ClaimRequest, now: Timestamp) -> Vec<Task> {
        let Some(settings) = self.queues.get(&req.queue).cloned() else {
            return Vec::new();
        };
        if settings.paused {
            return Vec::new();
        }
        let mut max = req.max;
        if let Some(limit) = settings.max_leased {
            let leased = self
                .tasks
                .values()
                .filter(|t| t.queue == req.queue && t.state == TaskState::Leased)
                .count();
            max = max.min(limit.saturating_sub(u32::try_from(leased).unwrap_or(u32::MAX)));
        }
        if let Some(limit) = &settings.rate_limit {
            let bucket = self
                .buckets
                .entry(req.queue.clone())
                .or_insert_with(|| TokenBucket::full(limit, now));
            max = max.min(bucket.available(limit, now));
        }
        let due = self.in_turns(&req.queue, &settings, max as usize, now);
        if let (Some(limit), Some(bucket)) =
            (&settings.rate_limit, self.buckets.get_mut(&req.queue))
        {
            bucket.take(limit, now, u32::try_from(due.len()).unwrap_or(u32::MAX));
        }
        let mut claimed = Vec::with_capacity(due.len());
        for s in due {
            self.waiting.remove(&s);
            self.next_token += 1;
            let t = self.tasks.get_mut(&s.3).expect("a waiting task exists");
            let lease = transition::lease_for(t.lease_ms, req.lease, settings.lease);
            let expires_at = now.plus(lease);
            t.attempt += 1;
            t.state = TaskState::Leased;
            t.updated_at = now;
            t.lease = Some(Lease {
                owner: req.worker.clone(),
                token: LeaseToken(self.next_token),
                expires_at,
            });
            self.leases.insert((expires_at, t.id));
            claimed.push(t.clone());
        }
        claimed
    }

    /// Up to `max` due tasks of `q` in the groups' turns (docs/spec.md §4):
    /// rounds over the groups with a due task and room, in name order
    /// after the one served last, one task each per round.
    fn in_turns(
        &mut self,
        q: &QueueName,
        settings: &QueueSettings,
        max: usize,
        now: Timestamp,
    ) -> Vec<Slot> {
        let lo = (q.clone(), i16::MIN, Timestamp::MIN, TaskId(0));
        // A queue without groups claims as if there were none, and leaves
        // the turns where they stood.
        let has_groups = self.grouped > 0
            && self.tasks.values().any(|t| {
                t.queue == *q
                    && t.group.is_some()
                    && !matches!(t.state, TaskState::Dead | TaskState::Pending)
            });
        if !has_groups {
            return self
                .waiting
                .range(lo..)
                .take_while(|s| s.0 == *q)
                .filter(|s| s.2 <= now)
                .take(max)
                .cloned()
                .collect();
        }
        let group_of = |t: &Task| t.group.as_ref().map_or("", |g| g.as_str()).to_string();
        let mut queues: BTreeMap<String, std::collections::VecDeque<Slot>> = BTreeMap::new();
        for s in self.waiting.range(lo..).take_while(|s| s.0 == *q) {
            if s.2 <= now {
                let group = group_of(&self.tasks[&s.3]);
                queues.entry(group).or_default().push_back(s.clone());
            }
        }
        let mut room: HashMap<String, u64> = queues.keys().map(|g| (g.clone(), u64::MAX)).collect();
        if let Some(cap) = settings.group_concurrency {
            for (g, left) in room.iter_mut().filter(|(g, _)| !g.is_empty()) {
                let leased = self
                    .tasks
                    .values()
                    .filter(|t| t.queue == *q && t.state == TaskState::Leased)
                    .filter(|t| group_of(t) == *g)
                    .count() as u64;
                *left = u64::from(cap).saturating_sub(leased);
            }
        }
        if let Some(limit) = &settings.group_rate_limit {
            for (g, left) in room.iter_mut().filter(|(g, _)| !g.is_empty()) {
                let bucket = self
                    .group_buckets
                    .entry((q.clone(), g.clone()))
                    .or_insert_with(|| TokenBucket::full(limit, now));
                *left = (*left).min(u64::from(bucket.available(limit, now)));
            }
        }
        let mut given: HashMap<String, u32> = HashMap::new();
        let last = self.last_turn.get(q).cloned();
        let mut order: Vec<String> = queues.keys().cloned().collect();
        if let Some(last) = &last {
            let after = order.iter().position(|g| g > last).unwrap_or(order.len());
            order.rotate_left(after);
        }
        let mut out = Vec::new();
        let mut served = None;
        while out.len() < max {
            let before = out.len();
            for g in &order {
                if out.len() >= max {
                    break;
                }
                let left = room.get_mut(g).expect("every group has room counted");
                if *left == 0 {
                    continue;
                }
                if let Some(s) = queues.get_mut(g).and_then(|d| d.pop_front()) {
                    *left -= 1;
                    out.push(s);
                    *given.entry(g.clone()).or_default() += 1;
                    served = Some(g.clone());
                }
            }
            if out.len() == before {
                break;
            }
        }
        if let Some(g) = served {
            self.last_turn.insert(q.clone(), g);
        }
        if let Some(limit) = &settings.group_rate_limit {
            for (g, n) in given.into_iter().filter(|(g, _)| !g.is_empty()) {
                if let Some(bucket) = self.group_buckets.get_mut(&(q.clone(), g)) {
                    bucket.take(limit, now, n);
                }
            }
        }
        out
    }

    /// The task `id` if `token` is its current lease token.
    fn held(&mut self, id: TaskId, token: LeaseToken) -> Result<&mut Task, StoreError> {
        let t = self.tasks.get_mut(&id).ok_or(StoreError::NotFound)?;
        match &t.lease {
            Some(lease) if lease.token == token => Ok(t),
            _ => Err(StoreError::LeaseLost),
        }
    }

    /// Takes the lease off `id` and puts it back to wait for `run_at`.
    fn unlease(&mut self, id: TaskId, run_at: Timestamp, now: Timestamp) -> Task {
        let t = self.tasks.get_mut(&id).expect("a held task exists");
        if let Some(lease) = t.lease.take() {
            self.leases.remove(&(lease.expires_at, id));
        }
        t.state = TaskState::Ready;
        t.run_at = run_at;
        t.updated_at = now;
        self.waiting.insert(slot(t));
        view(t, now)
    }

    fn remove(&mut self, id: TaskId, now: Timestamp) {
        let Some(t) = self.tasks.remove(&id) else {
            return;
        };
        self.grouped -= usize::from(t.group.is_some());
        self.waiting.remove(&slot(&t));
        if let Some(lease) = &t.lease {
            self.leases.remove(&(lease.expires_at, id));
        }
        if let Some(k) = t.key {
            self.keys.insert(
                (t.queue, k),
                KeyEntry {
                    id,
                    gone_at: Some(now),
                },
            );
        }
    }

    pub(super) fn ack(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        ack: Ack,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let t = self.held(id, token)?;
        let result = match ack {
            Ack::Reschedule(at) => {
                t.attempt = 0;
                self.unlease(id, at, now);
                return Ok(());
            }
            Ack::Done => None,
            Ack::Result(r) => Some(r),
        };
        self.remove(id, now);
        self.end(id, Ending::Completed, result, now);
        Ok(())
    }

    pub(super) fn fail(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
        now: Timestamp,
    ) -> Result<Task, StoreError> {
        let settings = {
            let q = self.held(id, token)?.queue.clone();
            self.settings(&q)
        };
        let t = self.held(id, token)?;
        transition::push_error(&mut t.errors, t.attempt, now, &req.message);
        let delay = backoff::delay(t.attempt, settings.backoff_base, settings.backoff_max);
        let next = transition::after_failure(
            t.attempt,
            t.max_attempts,
            req.discard,
            req.retry_at,
            now,
            delay,
        );
        match next {
            Next::RetryAt(at) => Ok(self.unlease(id, at, now)),
            Next::Dead => {
                let lease = t.lease.take().expect("a held task has a lease");
                t.state = TaskState::Dead;
                t.updated_at = now;
                let dead = t.clone();
                self.leases.remove(&(lease.expires_at, id));
                self.end(id, Ending::Failed, None, now);
                Ok(dead)
            }
        }
    }

    /// Release (`run_at` None: ready at once, so `run_at` is now) or snooze:
    /// back to waiting, attempt not counted.
    pub(super) fn give_back(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        run_at: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Task, StoreError> {
        let t = self.held(id, token)?;
        t.attempt = t.attempt.saturating_sub(1);
        let at = run_at.unwrap_or(now);
        Ok(self.unlease(id, at, now))
    }

    pub(super) fn extend(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Task, StoreError> {
        let t = self.held(id, token)?;
        let l = t.lease.as_mut().expect("a held task has a lease");
        let old = l.expires_at;
        l.expires_at = now.plus(lease);
        let new = l.expires_at;
        t.updated_at = now;
        let extended = t.clone();
        self.leases.remove(&(old, id));
        self.leases.insert((new, id));
        Ok(extended)
    }

    fn resolve(&self, r: &TaskRef) -> Result<TaskId, StoreError> {
        match r {
            TaskRef::Id(id) if self.tasks.contains_key(id) => Ok(*id),
            TaskRef::Key(q, k) => match self.keys.get(&(q.clone(), k.clone())) {
                Some(e) if e.gone_at.is_none() => Ok(e.id),
                _ => Err(StoreError::NotFound),
            },
            TaskRef::Id(_) => Err(StoreError::NotFound),
        }
    }

    pub(super) fn get(&self, r: &TaskRef, now: Timestamp) -> Result<Task, StoreError> {
        let id = self.resolve(r)?;
        Ok(view(&self.tasks[&id], now))
    }

    pub(super) fn update(
        &mut self,
        r: &TaskRef,
        patch: TaskPatch,
        now: Timestamp,
    ) -> Result<Task, StoreError> {
        let id = self.resolve(r)?;
        let settings = self.settings(&self.tasks[&id].queue);
        if let Some(p) = &patch.payload {
            check_payload(p, &settings)?;
        }
        let t = self.tasks.get_mut(&id).expect("a resolved task exists");
        if t.state == TaskState::Leased {
            return Err(StoreError::LeaseHeld);
        }
        let waits = self.waiting.remove(&slot(t));
        if let Some(p) = patch.payload {
            t.payload = p;
        }
        if let Some(at) = patch.run_at {
            t.run_at = at;
        }
        if let Some(p) = patch.priority {
            t.priority = p;
        }
        t.updated_at = now;
        if waits {
            self.waiting.insert(slot(t));
        }
        Ok(view(t, now))
    }

    pub(super) fn cancel(&mut self, r: &TaskRef, now: Timestamp) -> Result<(), StoreError> {
        let id = self.resolve(r)?;
        self.remove(id, now);
        self.end(id, Ending::Failed, None, now);
        Ok(())
    }

    pub(super) fn forget_memory_only(&mut self) {
        self.last_turn.clear();
        self.buckets.clear();
        self.group_buckets.clear();
    }

    /// Queue `q`'s groups with tasks waiting or leased, busiest first.
    pub(super) fn groups(
        &self,
        q: &QueueName,
        limit: usize,
        now: Timestamp,
    ) -> Result<Vec<GroupStats>, StoreError> {
        spool_core::groups::validate_limit(limit)?;
        let rate = self.settings(q).group_rate_limit;
        let mut by_group: BTreeMap<TaskGroup, GroupStats> = BTreeMap::new();
        for t in self.tasks.values().filter(|t| t.queue == *q) {
            let Some(g) = &t.group else { continue };
            let stats = by_group.entry(g.clone()).or_insert_with(|| GroupStats {
                group: g.clone(),
                waiting: 0,
                leased: 0,
                rate_tokens: rate.map(|limit| {
                    let bucket = self.group_buckets.get(&(q.clone(), g.as_str().to_owned()));
                    TokenBucket::left(bucket, &limit, now)
                }),
            });
            match t.state {
                TaskState::Leased => stats.leased += 1,
                TaskState::Dead | TaskState::Pending => {}
                _ => stats.waiting += 1,
            }
        }
        let busy = by_group
            .into_values()
            .filter(|s| s.waiting + s.leased > 0)
            .collect();
        Ok(spool_core::groups::busiest_first(busy, limit))
    }

    pub(super) fn retry(&mut self, id: TaskId, now: Timestamp) -> Result<Task, StoreError> {
        let t = self.tasks.get_mut(&id).ok_or(StoreError::NotFound)?;
        if t.state != TaskState::Dead {
            return Err(StoreError::bad_request("only a dead task can be retried"));
        }
        t.attempt = 0;
        Ok(self.unlease(id, now, now))
    }

    pub(super) fn retry_dead(&mut self, q: &QueueName, now: Timestamp) -> u64 {
        let dead: Vec<TaskId> = self
            .tasks
            .values()
            .filter(|t| &t.queue == q && t.state == TaskState::Dead)
            .map(|t| t.id)
            .collect();
        for &id in &dead {
            self.tasks.get_mut(&id).expect("a dead task exists").attempt = 0;
            self.unlease(id, now, now);
        }
        dead.len() as u64
    }

    pub(super) fn list(&self, req: &ListRequest, now: Timestamp) -> Result<TaskPage, StoreError> {
        if req.limit == 0 || req.limit > MAX_LIST_LIMIT {
            return Err(StoreError::bad_request("limit must be 1..=1000"));
        }
        // The cursor is the sort key of the last task of the previous page.
        let sort_key = |t: &Task| match req.order {
            ListOrder::Id => (0, t.id),
            ListOrder::AttemptsDesc => (u32::MAX - t.attempt, t.id),
        };
        let after = match &req.cursor {
            None => None,
            Some(c) => Some(parse_cursor(c)?),
        };
        let mut tasks: Vec<Task> = self
            .tasks
            .values()
            .filter(|t| t.queue == req.queue)
            .map(|t| view(t, now))
            .filter(|t| req.state.is_none_or(|s| s == t.state))
            .filter(|t| after.is_none_or(|a| sort_key(t) > a))
            .collect();
        tasks.sort_by_key(sort_key);
        let more = tasks.len() > req.limit;
        tasks.truncate(req.limit);
        let next_cursor = match tasks.last() {
            Some(last) if more => {
                let (rank, id) = sort_key(last);
                Some(format!("{rank}.{id}"))
            }
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    pub(super) fn stats(&self, now: Timestamp) -> Vec<QueueStats> {
        let mut all: BTreeMap<QueueName, QueueStats> = self
            .queues
            .iter()
            .map(|(q, s)| {
                let stats = QueueStats {
                    name: q.clone(),
                    paused: s.paused,
                    counts: Default::default(),
                    kinds: KindCounts::new(),
                    oldest_ready_age: None,
                    rate_tokens: s
                        .rate_limit
                        .map(|limit| TokenBucket::left(self.buckets.get(q), &limit, now)),
                };
                (q.clone(), stats)
            })
            .collect();
        for t in self.tasks.values() {
            let t = view(t, now);
            let s = all.get_mut(&t.queue).expect("a task's queue exists");
            *s.counts.slot(t.state) += 1;
            *s.kinds.entry(t.kind.clone()).or_default().slot(t.state) += 1;
            if t.state == TaskState::Ready {
                let age = now.since(t.run_at);
                s.oldest_ready_age = Some(s.oldest_ready_age.map_or(age, |a| a.max(age)));
            }
        }
        all.into_values().collect()
    }

    pub(super) fn put_queue(
        &mut self,
        q: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        let current = self.queues.get(q).cloned().unwrap_or_default();
        let was = (current.rate_limit, current.group_rate_limit);
        let settings = change.apply(current)?;
        if settings.rate_limit != was.0 {
            self.buckets.remove(q);
        }
        if settings.group_rate_limit != was.1 {
            self.group_buckets.retain(|(queue, _), _| queue != q);
        }
        self.queues.insert(q.clone(), settings.clone());
        Ok(settings)
    }

    pub(super) fn get_queue(&self, q: &QueueName) -> Result<QueueSettings, StoreError> {
        self.queues
            .get(q)
            .cloned()
            .ok_or_else(|| StoreError::QueueNotFound(q.clone()))
    }

    pub(super) fn set_paused(&mut self, q: &QueueName, paused: bool) -> Result<(), StoreError> {
        let s = self
            .queues
            .get_mut(q)
            .ok_or_else(|| StoreError::QueueNotFound(q.clone()))?;
        s.paused = paused;
        Ok(())
    }
}

fn check_payload(p: &Payload, settings: &QueueSettings) -> Result<(), StoreError> {
    let size = p.len() as u64;
    if size > settings.max_payload {
        return Err(StoreError::PayloadTooLarge {
            size,
            max: settings.max_payload,
        });
    }
    Ok(())
}

fn parse_cursor(c: &str) -> Result<(u32, TaskId), StoreError> {
    let bad = || StoreError::bad_request("malformed cursor");
    let (rank, id) = c.split_once('.').ok_or_else(bad)?;
    let rank = rank.parse().map_err(|_| bad())?;
    let id = id.parse().map_err(|_| bad())?;
    Ok((rank, TaskId(id)))
}

/// Schedules: definitions, and the tick guard that fires each tick once.
impl State {
    pub(super) fn put_schedule(
        &mut self,
        spec: ScheduleSpec,
        now: Timestamp,
    ) -> Result<Schedule, StoreError> {
        spec.validate()?;
        check_payload(&spec.payload, &self.settings(&spec.queue))?;
        let (last_fire_at, created_at) = self
            .schedules
            .get(&spec.name)
            .map_or((None, now), |s| (s.last_fire_at, s.created_at));
        let schedule = Schedule {
            spec,
            last_fire_at,
            created_at,
        };
        self.schedules
            .insert(schedule.spec.name.clone(), schedule.clone());
        Ok(schedule)
    }

    pub(super) fn list_schedules(&self) -> Vec<Schedule> {
        self.schedules.values().cloned().collect()
    }

    pub(super) fn delete_schedule(&mut self, name: &Kind) -> Result<(), StoreError> {
        self.schedules
            .remove(name)
            .map(|_| ())
            .ok_or(StoreError::NotFound)
    }

    pub(super) fn fire_schedule(
        &mut self,
        name: &Kind,
        tick: Timestamp,
        now: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        let s = self
            .schedules
            .get(name)
            .ok_or(StoreError::NotFound)?
            .clone();
        if s.last_fire_at.is_some_and(|last| last >= tick) {
            return Ok(None);
        }
        let is_tick = s
            .spec
            .cadence
            .next_after(tick.minus(Duration::from_millis(1)))
            == Some(tick);
        if tick > now.plus(Duration::from_secs(1)) || tick <= s.created_at || !is_tick {
            return Err(StoreError::bad_request("not a due tick of this schedule"));
        }
        let mut task = NewTask::new(s.spec.payload.clone())
            .run_at(tick)
            .key(tick_key(name, tick))
            .lease_ms(s.spec.deadline_at(tick).as_millis() as u64);
        task.kind = s.spec.kind.clone();
        let out = self.enqueue(&s.spec.queue, vec![task], now)?;
        if let Some(entry) = self.schedules.get_mut(name) {
            entry.last_fire_at = Some(tick);
        }
        Ok(out.into_iter().next())
    }
}
