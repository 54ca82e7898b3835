//! Which queues this process last saw with claim limits, so that its
//! claims there go straight to the limited path (`crate::ops::claim_limits`)
//! instead of first asking the ordinary claim statement, which would answer
//! `limited` and nothing else.
//!
//! Only a hint: a queue whose limits were set or removed on another node is
//! learned of at the next claim, whose statement says which it is.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

/// The queues this process last saw with limits.
#[derive(Debug, Default)]
pub(crate) struct LimitedQueues(Mutex<HashSet<String>>);

impl LimitedQueues {
    pub(crate) fn contains(&self, queue: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(queue)
    }

    /// Remembers what a claim statement said of `queue`.
    pub(crate) fn set(&self, queue: &str, limited: bool) {
        let mut set = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if limited {
            set.insert(queue.to_string());
        } else {
            set.remove(queue);
        }
    }
}
