//! Long-poll claims waiting for work.
//!
//! A claim that finds nothing and may wait is parked here, first come first
//! served per queue. When a task becomes ready in that queue the core claims
//! for the oldest waiter; when a waiter's time runs out it gets an empty
//! answer. Deadlines are real (monotonic) time, not the store clock: a wait
//! is a transport timeout, not task semantics.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use spool_core::{QueueName, StoreError};
use tokio::sync::oneshot;

use crate::state::TaskView;

pub(crate) type ClaimReply = oneshot::Sender<Result<Vec<TaskView>, StoreError>>;

#[derive(Debug)]
pub(crate) struct Waiter {
    pub worker: String,
    pub max: u32,
    pub lease: Option<Duration>,
    pub reply: ClaimReply,
}

#[derive(Debug, Default)]
pub(crate) struct Waiters {
    next_seq: u64,
    parked: HashMap<u64, (QueueName, Waiter)>,
    /// Arrival order per queue; may hold seqs already answered (skipped).
    by_queue: HashMap<QueueName, VecDeque<u64>>,
    /// Deadlines; may hold seqs already answered (skipped).
    deadlines: BinaryHeap<Reverse<(Instant, u64)>>,
}

impl Waiters {
    pub(crate) fn park(&mut self, queue: QueueName, waiter: Waiter, deadline: Instant) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_queue
            .entry(queue.clone())
            .or_default()
            .push_back(seq);
        self.deadlines.push(Reverse((deadline, seq)));
        self.parked.insert(seq, (queue, waiter));
    }

    pub(crate) fn has_waiters(&self, queue: &QueueName) -> bool {
        self.by_queue.get(queue).is_some_and(|q| !q.is_empty())
    }

    /// How many tasks the waiters of `queue` would take at most, together.
    pub(crate) fn wanted(&self, queue: &QueueName) -> usize {
        self.by_queue.get(queue).map_or(0, |order| {
            order
                .iter()
                .filter_map(|seq| self.parked.get(seq))
                .map(|(_, w)| w.max as usize)
                .sum()
        })
    }

    /// The oldest waiter of `queue` whose caller is still listening.
    pub(crate) fn pop(&mut self, queue: &QueueName) -> Option<Waiter> {
        let order = self.by_queue.get_mut(queue)?;
        while let Some(seq) = order.pop_front() {
            if let Some((_, w)) = self.parked.remove(&seq) {
                if !w.reply.is_closed() {
                    return Some(w);
                }
            }
        }
        self.by_queue.remove(queue);
        None
    }

    /// Removes and returns every waiter whose deadline has passed.
    pub(crate) fn take_expired(&mut self, now: Instant) -> Vec<Waiter> {
        let mut out = Vec::new();
        while let Some(Reverse((at, seq))) = self.deadlines.peek().copied() {
            if at > now {
                break;
            }
            self.deadlines.pop();
            let Some((queue, w)) = self.parked.remove(&seq) else {
                continue;
            };
            if let Some(order) = self.by_queue.get_mut(&queue) {
                order.retain(|&s| s != seq);
                if order.is_empty() {
                    self.by_queue.remove(&queue);
                }
            }
            out.push(w);
        }
        out
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.peek().map(|Reverse((at, _))| *at)
    }

    /// Answers every waiter with `unavailable`.
    pub(crate) fn fail_all(&mut self, why: &str) {
        for (_, (_, w)) in self.parked.drain() {
            let _ = w.reply.send(Err(StoreError::Unavailable(why.to_string())));
        }
        self.by_queue.clear();
        self.deadlines.clear();
    }
}
