//! One queue's ready tasks in claim order: priority, then run_at, then id.
//!
//! Nearly every task becomes ready in that order anyway — enqueued now,
//! with an id and a run_at that only grow — so each priority has a lane
//! whose FIFO holds bare ids (8 bytes a task, in chunks that are freed as
//! they drain). A task that arrives out of order (a retry or lease expiry
//! with an older run_at, a scheduled task falling due late, a changed one)
//! goes to the lane's ordered side set instead; a claim takes the smaller
//! head of the two.
//!
//! A FIFO entry is never removed from the middle: a task leaving it other
//! than from the front leaves a stale id behind, recognised and dropped when
//! it reaches the front (the entry's `IN_FIFO` flag is off), and the task is
//! marked `NO_FIFO` so it can never join a FIFO again and be mistaken for
//! its stale copy. The caller (the state, which owns the records) does that
//! check; this module keeps the order and the record's index flags.
//!
//! A queue has one ready index for its ungrouped tasks and one per group
//! (`super::groups`); a task is in at most one of them.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use spool_core::Timestamp;

use super::entry::{flag, Entry};

/// Ids per FIFO chunk.
const CHUNK: usize = 32 * 1024;
/// Room for ids in a FIFO's first chunk. It grows as a `Vec` does, up to
/// [`CHUNK`]; later chunks get their full room at once. A queue holding
/// few tasks, or a group (a queue may have many thousands), so costs
/// bytes, not a full chunk's 256 KiB.
const FIRST_CHUNK: usize = 16;

#[derive(Debug, Default)]
pub(crate) struct Fifo {
    chunks: VecDeque<Vec<u64>>,
    /// Position of the front id in the first chunk.
    head: usize,
}

impl Fifo {
    fn push(&mut self, id: u64) {
        match self.chunks.back_mut() {
            Some(c) if c.len() < CHUNK => c.push(id),
            _ => {
                let room = if self.chunks.is_empty() {
                    FIRST_CHUNK
                } else {
                    CHUNK
                };
                let mut c = Vec::with_capacity(room);
                c.push(id);
                self.chunks.push_back(c);
            }
        }
    }

    pub(crate) fn front(&self) -> Option<u64> {
        self.chunks.front().and_then(|c| c.get(self.head)).copied()
    }

    pub(crate) fn pop(&mut self) {
        let Some(c) = self.chunks.front() else {
            return;
        };
        self.head += 1;
        if self.head >= c.len() {
            self.chunks.pop_front();
            self.head = 0;
        }
    }

    /// Ids from the front, stale ones included.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.chunks
            .iter()
            .enumerate()
            .flat_map(move |(i, c)| c[if i == 0 { self.head } else { 0 }..].iter().copied())
    }
}

#[derive(Debug, Default)]
pub(crate) struct Lane {
    pub fifo: Fifo,
    pub side: BTreeSet<(Timestamp, u64)>,
    /// The key last pushed to the FIFO: later keys may follow it there.
    last: Option<(Timestamp, u64)>,
}

impl Lane {
    /// Adds a task; true if it went to the FIFO.
    pub(crate) fn add(&mut self, run_at: Timestamp, id: u64, fifo_ok: bool) -> bool {
        let key = (run_at, id);
        if fifo_ok && self.last.is_none_or(|last| key > last) {
            self.fifo.push(id);
            self.last = Some(key);
            true
        } else {
            self.side.insert(key);
            false
        }
    }

    fn is_empty(&self) -> bool {
        self.fifo.front().is_none() && self.side.is_empty()
    }
}

/// The lanes of one queue, by priority (lower first).
#[derive(Debug, Default)]
pub(crate) struct ReadyIndex {
    pub lanes: BTreeMap<i16, Lane>,
}

impl ReadyIndex {
    pub(crate) fn lane(&mut self, priority: i16) -> &mut Lane {
        self.lanes.entry(priority).or_default()
    }

    /// Adds ready task `id` in its lane, noting in `e` where it went.
    pub(crate) fn insert(&mut self, e: &mut Entry, id: u64) {
        let fifo_ok = !e.has(flag::NO_FIFO);
        let in_fifo = self.lane(e.priority).add(e.run_at, id, fifo_ok);
        e.flags |= if in_fifo {
            flag::IN_FIFO
        } else {
            flag::IN_SIDE
        };
    }

    /// Takes task `id` out: from the side set, from the FIFO's front, or
    /// by leaving a stale copy in the FIFO (then `e` is marked `NO_FIFO`).
    pub(crate) fn remove(&mut self, e: &mut Entry, id: u64) {
        let lane = self.lane(e.priority);
        if e.has(flag::IN_SIDE) {
            lane.side.remove(&(e.run_at, id));
        } else if e.has(flag::IN_FIFO) {
            if lane.fifo.front() == Some(id) {
                lane.fifo.pop();
            } else {
                e.flags |= flag::NO_FIFO;
            }
        }
        e.flags &= !(flag::IN_FIFO | flag::IN_SIDE);
        self.prune(e.priority);
    }

    /// Drops lanes left with nothing in them, stale ids included.
    pub(crate) fn prune(&mut self, priority: i16) {
        if self.lanes.get(&priority).is_some_and(Lane::is_empty) {
            self.lanes.remove(&priority);
        }
    }
}
