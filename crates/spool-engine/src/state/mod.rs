//! The engine's in-memory state: every task and every index over them.
//!
//! Owned by the core thread alone, so nothing here locks. Each task is in
//! exactly one index matching its state: the queue's ready index, the
//! scheduled timer set, the lease timer set, or none (dead, pending). Every
//! transition is `detach` (leave the old index, uncount), change, `attach`
//! (join the new index, count); keeping that discipline in one place is what
//! keeps counts and indexes exact.
//!
//! Payloads are not here: each task points into the log segment that wrote
//! its payload, and `segments` counts the live payloads per segment so the
//! log keeps exactly the segments still needed.

mod apply;
mod deps;
pub(crate) mod entry;
mod front;
pub(crate) mod groups;
mod keys;
#[cfg(test)]
mod one_task;
mod query;
pub(crate) mod queue;
mod ready;
mod table;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use hashbrown::HashMap;
use spool_core::{
    Kind, LeaseToken, QueueName, QueueSettings, Schedule, StoreError, TaskGroup, TaskRef,
    TaskState, Timestamp,
};

use groups::Turn;

pub(crate) use entry::{flag, Entry, Extra, LeaseSlot, PayloadRef, MAX_KINDS, MAX_QUEUES};
pub(crate) use query::TaskView;
pub(crate) use queue::QueueState;
pub(crate) use table::{TaskTable, WalkFrom};

/// How a log segment's task payloads are used.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SegmentUse {
    /// Payloads in it that live tasks point at.
    pub live: u64,
    /// Payloads of tasks written in it (a lower bound after a restart:
    /// checkpoints carry it, but only for segments with live payloads).
    pub written: u64,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub tasks: TaskTable,
    pub queues: Vec<QueueState>,
    queue_index: HashMap<QueueName, u32>,
    pub kinds: Vec<Kind>,
    kind_index: HashMap<Kind, u32>,
    /// Scheduled tasks by run_at.
    pub scheduled: BTreeSet<(Timestamp, u64)>,
    /// Leased tasks by lease expiry.
    pub leases: BTreeSet<(Timestamp, u64)>,
    /// The next id to assign; ids are never reused.
    pub next_id: u64,
    /// Queues with newly ready tasks, for the core to serve waiters.
    pub woken: Vec<u32>,
    /// Periodic schedules by name.
    pub schedules: BTreeMap<Kind, Schedule>,
    /// Payloads per log segment (by seq) that live tasks point at: a
    /// segment with none may go, one with few is worth compacting.
    pub segments: HashMap<u64, SegmentUse>,
    /// Each parent's tasks still waiting for it (`deps`).
    children: HashMap<u64, hashbrown::HashSet<u64>>,
}

impl State {
    pub(crate) fn new() -> Self {
        State {
            next_id: 1,
            ..State::default()
        }
    }

    pub(crate) fn queue_of(&self, name: &QueueName) -> Option<u32> {
        self.queue_index.get(name).copied()
    }

    pub(crate) fn queue(&self, q: u32) -> &QueueState {
        &self.queues[q as usize]
    }

    pub(crate) fn queue_mut(&mut self, q: u32) -> &mut QueueState {
        &mut self.queues[q as usize]
    }

    /// The queue's index, creating it with `settings` if it does not exist.
    pub(crate) fn ensure_queue(
        &mut self,
        name: &QueueName,
        settings: impl FnOnce() -> QueueSettings,
    ) -> u32 {
        if let Some(q) = self.queue_of(name) {
            return q;
        }
        let q = self.queues.len() as u32;
        self.queues.push(QueueState::new(name.clone(), settings()));
        self.queue_index.insert(name.clone(), q);
        q
    }

    /// Refuses a change that would make a queue or kinds past what a task
    /// record can index (checked before anything is logged).
    pub(crate) fn admit<'k>(
        &self,
        queue: &QueueName,
        kinds: impl IntoIterator<Item = &'k Kind>,
    ) -> Result<(), StoreError> {
        if self.queue_of(queue).is_none() && self.queues.len() >= MAX_QUEUES {
            return Err(StoreError::bad_request(format!(
                "this store already holds {MAX_QUEUES} queues, the most it can"
            )));
        }
        let mut new: Vec<&Kind> = kinds
            .into_iter()
            .filter(|k| !self.kind_index.contains_key(*k))
            .collect();
        new.sort();
        new.dedup();
        if self.kinds.len() + new.len() > MAX_KINDS {
            return Err(StoreError::bad_request(format!(
                "this store already holds {} kinds; it can hold {MAX_KINDS}",
                self.kinds.len()
            )));
        }
        Ok(())
    }

    pub(crate) fn intern_kind(&mut self, kind: &Kind) -> u32 {
        if let Some(&k) = self.kind_index.get(kind) {
            return k;
        }
        let k = self.kinds.len() as u32;
        self.kinds.push(kind.clone());
        self.kind_index.insert(kind.clone(), k);
        k
    }

    /// Adds a new task (not already present), of `group` if given, and
    /// indexes it.
    pub(crate) fn insert(
        &mut self,
        id: u64,
        entry: Entry,
        extra: Option<Extra>,
        group: Option<&TaskGroup>,
        now: Timestamp,
    ) {
        let queue = self.queue_mut(entry.queue());
        if let Some(key) = extra.as_ref().and_then(|x| x.key.as_ref()) {
            queue.keys.bind(key.clone(), id);
        }
        let group = group.map(|g| {
            let slot = queue.groups.join(g);
            if let Some(limit) = queue.settings.group_rate_limit {
                queue.groups.throttle_if_spent(slot, &limit, now);
            }
            slot
        });
        if let Some(deps) = extra.as_ref().and_then(|x| x.deps.as_deref()) {
            self.register_waits(id, deps);
        }
        self.pin(entry.payload);
        self.tasks.insert(id, entry, extra, group);
        self.attach(id, now);
        self.next_id = self.next_id.max(id + 1);
    }

    /// Unindexes and removes a task; its key keeps deduplicating until
    /// `dedup_window` after `now`.
    pub(crate) fn remove(&mut self, id: u64, now: Timestamp) -> Option<Entry> {
        self.detach(id);
        let table::Removed {
            entry,
            extra,
            group,
        } = self.tasks.remove(id)?;
        self.unpin(entry.payload);
        if let Some(deps) = extra.as_ref().and_then(|x| x.deps.as_deref()) {
            self.unregister_waits(id, deps);
        }
        let queue = self.queue_mut(entry.queue());
        if let Some(g) = group {
            queue.groups.leave(g);
        }
        if let Some(key) = extra.and_then(|x| x.key) {
            let until = now.plus(queue.settings.dedup_window);
            queue.keys.retire(&key, id, until);
        }
        Some(entry)
    }

    /// A live task's payload was written in `p`'s segment.
    pub(crate) fn pin(&mut self, p: PayloadRef) {
        let used = self.segments.entry(p.seq()).or_default();
        used.live += 1;
        used.written += 1;
    }

    /// One payload in `p`'s segment is no longer any live task's.
    pub(crate) fn unpin(&mut self, p: PayloadRef) {
        if let Some(used) = self.segments.get_mut(&p.seq()) {
            used.live -= 1;
            if used.live == 0 {
                self.segments.remove(&p.seq());
            }
        }
    }

    /// Adds the task to the index of its state, deciding scheduled vs
    /// ready from `run_at` against `now`.
    pub(crate) fn attach(&mut self, id: u64, now: Timestamp) {
        let group = self.tasks.group(id);
        let lease_expiry = self.lease_expiry(id);
        let Some(e) = self.tasks.get_mut(id) else {
            return;
        };
        if matches!(e.state, TaskState::Scheduled | TaskState::Ready) {
            e.state = if e.run_at <= now {
                TaskState::Ready
            } else {
                TaskState::Scheduled
            };
        }
        let (q, kind, state, attempt) = (e.queue(), e.kind(), e.state, e.attempt);
        let queue = &mut self.queues[q as usize];
        let cap = queue.settings.group_concurrency;
        match state {
            TaskState::Ready => {
                match group {
                    Some(g) => {
                        queue.groups.change(g, cap, |group| {
                            group.ready.insert(e, id);
                            group.counts.ready += 1;
                        });
                        queue.groups.ready += 1;
                    }
                    None => queue.ready.insert(e, id),
                }
                if !queue.woken {
                    queue.woken = true;
                    self.woken.push(q);
                }
            }
            TaskState::Scheduled => {
                self.scheduled.insert((e.run_at, id));
                if let Some(g) = group {
                    queue
                        .groups
                        .change(g, cap, |group| group.counts.scheduled += 1);
                }
            }
            TaskState::Leased => {
                if let Some(at) = lease_expiry {
                    self.leases.insert((at, id));
                }
                if let Some(g) = group {
                    queue
                        .groups
                        .change(g, cap, |group| group.counts.leased += 1);
                }
            }
            TaskState::Dead | TaskState::Pending => {}
        }
        if state != TaskState::Ready {
            queue.members[state.index()].insert(id);
        }
        if attempt > 0 {
            queue.by_attempts.insert((Reverse(attempt), id));
        }
        queue.count(kind, state, 1);
    }

    /// Removes the task from the index of its state.
    pub(crate) fn detach(&mut self, id: u64) {
        let group = self.tasks.group(id);
        let lease_expiry = self.lease_expiry(id);
        let Some(e) = self.tasks.get_mut(id) else {
            return;
        };
        let (q, kind, state, attempt) = (e.queue(), e.kind(), e.state, e.attempt);
        let queue = &mut self.queues[q as usize];
        let cap = queue.settings.group_concurrency;
        match (state, group) {
            (TaskState::Ready, None) => queue.ready.remove(e, id),
            (TaskState::Ready, Some(g)) => {
                queue.groups.change(g, cap, |group| {
                    group.ready.remove(e, id);
                    group.counts.ready -= 1;
                });
                queue.groups.ready -= 1;
            }
            (TaskState::Scheduled, _) => {
                self.scheduled.remove(&(e.run_at, id));
                if let Some(g) = group {
                    queue
                        .groups
                        .change(g, cap, |group| group.counts.scheduled -= 1);
                }
            }
            (TaskState::Leased, _) => {
                if let Some(at) = lease_expiry {
                    self.leases.remove(&(at, id));
                }
                if let Some(g) = group {
                    queue
                        .groups
                        .change(g, cap, |group| group.counts.leased -= 1);
                }
                // A freed slot may let a claim waiting on a full queue or
                // group in.
                let capped =
                    queue.settings.max_leased.is_some() || (group.is_some() && cap.is_some());
                if capped && !queue.woken {
                    queue.woken = true;
                    self.woken.push(q);
                }
            }
            (TaskState::Dead | TaskState::Pending, _) => {}
        }
        if state != TaskState::Ready {
            queue.members[state.index()].remove(&id);
        }
        if attempt > 0 {
            queue.by_attempts.remove(&(Reverse(attempt), id));
        }
        queue.count(kind, state, -1);
    }

    /// The group of task `id`, if it has one.
    pub(crate) fn group_of(&self, id: u64) -> Option<&TaskGroup> {
        let q = self.tasks.get(id)?.queue();
        self.queue(q).groups.name(self.tasks.group(id)?)
    }

    /// When a leased task's lease expires, for `attach` and `detach`; the
    /// side table is read for leased tasks only.
    fn lease_expiry(&self, id: u64) -> Option<Timestamp> {
        let leased = self.tasks.get(id)?.state == TaskState::Leased;
        leased
            .then(|| self.tasks.extra(id)?.lease.as_ref().map(|l| l.expires_at))
            .flatten()
    }

    /// Up to `max` ready tasks of queue `q` in claim order, without taking
    /// them, each group's limits respected; notes the turn served last and
    /// takes each group's tokens under the queue's `group_rate_limit` for
    /// the tasks it gives (the claim that asks takes them all).
    ///
    /// With groups, the claim takes one task per turn (`groups::Turn`) in
    /// rounds: each round serves the next turns in order, a turn whose
    /// group has room and tasks left giving one. Only the first `max`
    /// turns can be served, and those are peeked a few tasks deep at a
    /// time, so a claim costs about `max` lookups however many groups the
    /// queue has.
    pub(crate) fn claim_order(&mut self, q: u32, max: usize, now: Timestamp) -> Vec<u64> {
        let queue = &mut self.queues[q as usize];
        if queue.groups.is_idle() {
            return front::front(&self.tasks, &mut queue.ready, q, max);
        }
        let ungrouped = queue.counts.ready > queue.groups.ready;
        let turns = queue.groups.next_turns(ungrouped, max);
        if turns.is_empty() {
            return Vec::new();
        }
        let cap = queue.settings.group_concurrency;
        let per_group = queue.settings.group_rate_limit;
        let room: Vec<u64> = turns
            .iter()
            .map(|t| match t {
                Turn::Ungrouped => u64::MAX,
                Turn::Group(g) => {
                    let room = queue.groups.room(*g, cap);
                    per_group.map_or(room, |l| room.min(queue.groups.tokens(*g, &l, now)))
                }
            })
            .collect();
        let mut depth = max.div_ceil(turns.len());
        // Each turn's front, one after the other in `ids`; `spans` says
        // where each turn's starts and ends.
        let mut ids = Vec::with_capacity(max);
        let mut spans = Vec::with_capacity(turns.len());
        loop {
            ids.clear();
            spans.clear();
            for (t, &room) in turns.iter().zip(&room) {
                let n = depth.min(usize::try_from(room).unwrap_or(usize::MAX));
                let start = ids.len();
                let index = match t {
                    Turn::Ungrouped => Some(&mut queue.ready),
                    Turn::Group(g) => queue.groups.ready_mut(*g),
                };
                if let Some(index) = index {
                    front::front_into(&self.tasks, index, q, n, &mut ids);
                }
                spans.push(start..ids.len());
            }
            let deeper = spans.iter().any(|s| s.len() == depth);
            if ids.len() >= max || !deeper || depth >= max {
                break;
            }
            depth = (depth * 2).min(max);
        }
        let mut out = Vec::with_capacity(max);
        let mut last = None;
        let mut given = vec![0u32; turns.len()];
        'rounds: for round in 0..depth {
            for (i, (t, span)) in turns.iter().zip(&spans).enumerate() {
                if out.len() >= max {
                    break 'rounds;
                }
                if let Some(&id) = ids[span.clone()].get(round) {
                    out.push(id);
                    given[i] += 1;
                    last = Some(t);
                }
            }
        }
        if let Some(&t) = last {
            queue.groups.served(t);
        }
        if let Some(limit) = per_group {
            for (t, &n) in turns.iter().zip(&given) {
                if let (Turn::Group(g), true) = (t, n > 0) {
                    queue.groups.take_tokens(*g, &limit, now, n);
                }
            }
        }
        out
    }

    /// Whether a claim on queue `q` could take a task now, its limits
    /// aside: an ungrouped ready task, or a group with one and room.
    pub(crate) fn claimable(&self, q: u32) -> bool {
        let queue = &self.queues[q as usize];
        queue.counts.ready > queue.groups.ready || queue.groups.any_turn()
    }

    /// Moves scheduled tasks whose time has come into their ready sets.
    ///
    /// Not logged: "ready" is derived from run_at and the clock, so recovery
    /// reaches the same conclusion by itself.
    pub(crate) fn activate_due(&mut self, now: Timestamp) {
        while let Some(&(at, id)) = self.scheduled.first() {
            if at > now {
                break;
            }
            if self.tasks.contains(id) {
                self.detach(id);
                self.attach(id, now);
            } else {
                self.scheduled.pop_first();
            }
        }
    }

    /// Ids whose leases have expired by `now`, earliest first.
    pub(crate) fn expired_leases(&self, now: Timestamp, limit: usize) -> Vec<u64> {
        self.leases
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .map(|&(_, id)| id)
            .collect()
    }

    /// The earliest time a timer (run_at or lease expiry) falls due.
    pub(crate) fn next_timer(&self) -> Option<Timestamp> {
        let s = self.scheduled.first().map(|t| t.0);
        let l = self.leases.first().map(|t| t.0);
        match (s, l) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The id of a live task, by id or by key.
    pub(crate) fn find(&self, task: &TaskRef) -> Result<u64, StoreError> {
        let id = match task {
            TaskRef::Id(id) => id.0,
            TaskRef::Key(queue, key) => self
                .queue_of(queue)
                .and_then(|q| self.queue(q).keys.live(key))
                .ok_or(StoreError::NotFound)?,
        };
        if self.tasks.contains(id) {
            Ok(id)
        } else {
            Err(StoreError::NotFound)
        }
    }

    /// The lease of a task leased under `token`: the fence against stale workers.
    pub(crate) fn leased(&self, id: u64, token: LeaseToken) -> Result<&LeaseSlot, StoreError> {
        let e = self.tasks.get(id).ok_or(StoreError::NotFound)?;
        let lease = self.tasks.extra(id).and_then(|x| x.lease.as_ref());
        match (e.state, lease) {
            (TaskState::Leased, Some(l)) if l.token == token.0 => Ok(l),
            _ => Err(StoreError::LeaseLost),
        }
    }

    /// Segments that still hold a live task's payload.
    pub(crate) fn pinned_segments(&self) -> Vec<u64> {
        self.segments.keys().copied().collect()
    }
}
