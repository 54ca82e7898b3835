//! The engine's in-memory state: every task and every index over them.
//!
//! Owned by the core thread alone, so nothing here locks. Each task is in
//! exactly one index matching its state: the queue's ready set, the
//! scheduled timer set, the lease timer set, or none (dead). Every
//! transition is `detach` (leave the old index, uncount), change, `attach`
//! (join the new index, count); keeping that discipline in one place is what
//! keeps counts and indexes exact.

mod apply;
pub(crate) mod entry;
mod keys;
mod query;
pub(crate) mod queue;
mod slab;

use std::collections::{BTreeMap, BTreeSet};

use hashbrown::HashMap;
use spool_core::{
    Kind, LeaseToken, QueueName, QueueSettings, Schedule, StoreError, TaskRef, TaskState, Timestamp,
};

pub(crate) use entry::{Entry, LeaseSlot, PayloadRef};
pub(crate) use queue::QueueState;
pub(crate) use slab::Slab;

#[derive(Debug, Default)]
pub(crate) struct State {
    pub tasks: Slab,
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

    pub(crate) fn intern_kind(&mut self, kind: &Kind) -> u32 {
        if let Some(&k) = self.kind_index.get(kind) {
            return k;
        }
        let k = self.kinds.len() as u32;
        self.kinds.push(kind.clone());
        self.kind_index.insert(kind.clone(), k);
        k
    }

    /// Adds the entry at `slot` to the index of its state, deciding
    /// scheduled vs ready from `run_at` against `now`.
    pub(crate) fn attach(&mut self, slot: u32, now: Timestamp) {
        let Some(e) = self.tasks.get_mut(slot) else {
            return;
        };
        if matches!(e.state, TaskState::Scheduled | TaskState::Ready) {
            e.state = if e.run_at <= now {
                TaskState::Ready
            } else {
                TaskState::Scheduled
            };
        }
        let (id, q, kind, state) = (e.id, e.queue, e.kind, e.state);
        match state {
            TaskState::Ready => {
                let key = (e.priority, e.run_at, id);
                let queue = &mut self.queues[q as usize];
                queue.ready.insert(key);
                if !queue.woken {
                    queue.woken = true;
                    self.woken.push(q);
                }
            }
            TaskState::Scheduled => {
                self.scheduled.insert((e.run_at, id));
            }
            TaskState::Leased => {
                if let Some(l) = &e.lease {
                    self.leases.insert((l.expires_at, id));
                }
            }
            TaskState::Dead => {}
        }
        let queue = &mut self.queues[q as usize];
        queue.members[state.index()].insert(id);
        queue.count(kind, state, 1);
    }

    /// Removes the entry at `slot` from the index of its state.
    pub(crate) fn detach(&mut self, slot: u32) {
        let Some(e) = self.tasks.get(slot) else {
            return;
        };
        let (id, q, kind, state) = (e.id, e.queue, e.kind, e.state);
        match state {
            TaskState::Ready => {
                self.queues[q as usize]
                    .ready
                    .remove(&(e.priority, e.run_at, id));
            }
            TaskState::Scheduled => {
                self.scheduled.remove(&(e.run_at, id));
            }
            TaskState::Leased => {
                if let Some(l) = &e.lease {
                    self.leases.remove(&(l.expires_at, id));
                }
            }
            TaskState::Dead => {}
        }
        let queue = &mut self.queues[q as usize];
        queue.members[state.index()].remove(&id);
        queue.count(kind, state, -1);
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
            match self.tasks.slot_of(id) {
                Some(slot) => {
                    self.detach(slot);
                    self.attach(slot, now);
                }
                None => {
                    self.scheduled.pop_first();
                }
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

    /// The slot of a live task, by id or by key.
    pub(crate) fn find(&self, task: &TaskRef) -> Result<u32, StoreError> {
        let id = match task {
            TaskRef::Id(id) => id.0,
            TaskRef::Key(queue, key) => self
                .queue_of(queue)
                .and_then(|q| self.queue(q).keys.live(key))
                .ok_or(StoreError::NotFound)?,
        };
        self.tasks.slot_of(id).ok_or(StoreError::NotFound)
    }

    /// The slot of a task leased under `token`: the fence against stale workers.
    pub(crate) fn leased(&self, id: u64, token: LeaseToken) -> Result<u32, StoreError> {
        let slot = self.tasks.slot_of(id).ok_or(StoreError::NotFound)?;
        let e = self.tasks.get(slot).ok_or(StoreError::NotFound)?;
        match (&e.state, &e.lease) {
            (TaskState::Leased, Some(l)) if l.token == token.0 => Ok(slot),
            _ => Err(StoreError::LeaseLost),
        }
    }
}
