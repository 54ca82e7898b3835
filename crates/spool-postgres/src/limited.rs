//! Which queues this process last saw with claim limits, so that its
//! claims there go straight to the limited path (`crate::ops::claim_limits`)
//! instead of first asking the ordinary claim statement, which would answer
//! `limited` and nothing else; and, of those, which have a rate limit, with
//! the turn this process's long polls on such a queue take
//! (`crate::ops::claim_pace`).
//!
//! Only a hint: a queue whose limits were set or removed on another node is
//! learned of at the next claim, whose statement says which it is. A rate
//! limit's turn is kept while the queue stays rated, so claims holding it
//! and claims arriving meanwhile share one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The turn long polls of one rate-limited queue take in this process: at
/// most one of them looks at the bucket, sleeps for it and claims at a
/// time.
pub(crate) type Turn = Arc<tokio::sync::Mutex<()>>;

/// The queues this process last saw with limits, each with its turn when
/// it has a rate limit.
#[derive(Debug, Default)]
pub(crate) struct LimitedQueues(Mutex<HashMap<String, Option<Turn>>>);

impl LimitedQueues {
    pub(crate) fn contains(&self, queue: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(queue)
    }

    /// The turn of `queue` if this process last saw it with a rate limit.
    pub(crate) fn turn(&self, queue: &str) -> Option<Turn> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(queue)
            .cloned()
            .flatten()
    }

    /// Remembers what a claim statement said of `queue`: whether it has
    /// limits, and whether a rate limit is one of them.
    pub(crate) fn set(&self, queue: &str, limited: bool, rated: bool) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !limited {
            map.remove(queue);
            return;
        }
        let entry = map.entry(queue.to_string()).or_default();
        match (rated, entry.is_some()) {
            (true, false) => *entry = Some(Turn::default()),
            (false, true) => *entry = None,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rated_queue_keeps_its_turn_until_it_is_no_longer_rated() {
        let q = LimitedQueues::default();
        q.set("a", true, false);
        assert!(q.contains("a") && q.turn("a").is_none());
        q.set("a", true, true);
        let first = q.turn("a");
        q.set("a", true, true);
        let again = q.turn("a");
        assert!(matches!((&first, &again), (Some(a), Some(b)) if Arc::ptr_eq(a, b)));
        q.set("a", true, false);
        assert!(q.turn("a").is_none());
        q.set("a", false, false);
        assert!(!q.contains("a"));
    }
}
