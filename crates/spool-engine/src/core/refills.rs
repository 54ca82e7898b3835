//! When rate-limited queues have tokens again: a waiting claim that the
//! rate limit stopped is served once its queue's bucket refills
//! (docs/spec.md §4), not at the next poll.
//!
//! Times are the store clock's, like task timers: a bucket refills with
//! the store's time. An entry wakes its queue once; a queue that is still
//! throttled then watches again.

use std::collections::BTreeSet;

use spool_core::Timestamp;

#[derive(Debug, Default)]
pub(crate) struct Refills {
    due: BTreeSet<(Timestamp, u32)>,
}

impl Refills {
    /// Wakes queue `q` at `at`.
    pub(crate) fn watch(&mut self, at: Timestamp, q: u32) {
        self.due.insert((at, q));
    }

    /// The queues whose time has come, each once.
    pub(crate) fn take_due(&mut self, now: Timestamp) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(&(at, q)) = self.due.first() {
            if at > now {
                break;
            }
            self.due.pop_first();
            if !out.contains(&q) {
                out.push(q);
            }
        }
        out
    }

    /// The earliest time a queue is to be woken.
    pub(crate) fn next(&self) -> Option<Timestamp> {
        self.due.first().map(|&(at, _)| at)
    }
}
