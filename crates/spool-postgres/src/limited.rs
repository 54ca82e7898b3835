//! Which queues this process last saw with claim limits, so that its
//! claims there go straight to the limited path (`crate::ops::claim_limits`)
//! instead of first asking the ordinary claim statement, which would answer
//! `limited` and nothing else; and, of those, which have a rate limit, with
//! the turn this process's long polls on such a queue take
//! (`crate::ops::claim_pace`).
//!
//! It also keeps whether each such queue's last claim took its groups in
//! turn, so that the next one sends that claim statement with the lock
//! (`crate::ops::claim_limits`, "One round trip").
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

/// What this process last saw of a queue with limits.
#[derive(Debug, Default)]
struct Seen {
    /// Its turn, when it has a rate limit.
    turn: Option<Turn>,
    /// Whether its claims take its groups in turn.
    grouped: bool,
}

/// The queues this process last saw with limits.
#[derive(Debug, Default)]
pub(crate) struct LimitedQueues(Mutex<HashMap<String, Seen>>);

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
            .and_then(|seen| seen.turn.clone())
    }

    /// Whether this process last saw `queue`'s claims take its groups in
    /// turn.
    pub(crate) fn grouped(&self, queue: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(queue)
            .is_some_and(|seen| seen.grouped)
    }

    /// Remembers what a claim statement said of `queue`: whether it has
    /// limits, whether a rate limit is one of them, and whether its claims
    /// take its groups in turn.
    pub(crate) fn set(&self, queue: &str, limited: bool, rated: bool, grouped: bool) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !limited {
            map.remove(queue);
            return;
        }
        let seen = map.entry(queue.to_string()).or_default();
        seen.grouped = grouped;
        match (rated, seen.turn.is_some()) {
            (true, false) => seen.turn = Some(Turn::default()),
            (false, true) => seen.turn = None,
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
        q.set("a", true, false, false);
        assert!(q.contains("a") && q.turn("a").is_none());
        q.set("a", true, true, false);
        let first = q.turn("a");
        q.set("a", true, true, true);
        let again = q.turn("a");
        assert!(matches!((&first, &again), (Some(a), Some(b)) if Arc::ptr_eq(a, b)));
        q.set("a", true, false, true);
        assert!(q.turn("a").is_none());
        q.set("a", false, false, false);
        assert!(!q.contains("a"));
    }

    #[test]
    fn whether_a_queue_is_grouped_follows_its_last_claim() {
        let q = LimitedQueues::default();
        assert!(!q.grouped("a"));
        q.set("a", true, false, true);
        assert!(q.grouped("a"));
        q.set("a", true, false, false);
        assert!(!q.grouped("a"));
        q.set("a", true, false, true);
        q.set("a", false, false, true);
        assert!(!q.grouped("a"));
    }
}
