//! Which queues this process last saw with claim limits, so that its
//! claims there go straight to the limited path (`crate::ops::claim_limits`)
//! instead of first asking the ordinary claim statement, which would answer
//! `limited` and nothing else; and, of those, which have a rate limit, with
//! the turn this process's long polls on such a queue take
//! (`crate::ops::claim_pace`).
//!
//! It also keeps whether each such queue's last claim took its groups in
//! turn, so that the next one sends that claim statement with the lock
//! (`crate::ops::claim_limits`, "One round trip"), and the queue's gate:
//! at most [`AT_THE_ROW`] of this process's limited claims of the queue
//! are at its row's lock at once.
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

/// How many of this process's limited claims of one queue may be at the
/// queue row's lock at once, holding it or queued for it: one. The others
/// wait in the process (`crate::ops::claim_limits`, "One at the row").
pub(crate) const AT_THE_ROW: usize = 1;

/// The permits of a queue's row: [`AT_THE_ROW`] of them.
pub(crate) type Gate = Arc<tokio::sync::Semaphore>;

/// What this process last saw of a queue with limits.
#[derive(Debug)]
struct Seen {
    /// Its turn, when it has a rate limit.
    turn: Option<Turn>,
    /// Whether its claims take its groups in turn.
    grouped: bool,
    /// Its claims' way to the row's lock.
    gate: Gate,
}

impl Default for Seen {
    fn default() -> Self {
        Seen {
            turn: None,
            grouped: false,
            gate: Arc::new(tokio::sync::Semaphore::new(AT_THE_ROW)),
        }
    }
}

/// The queues this process last saw with limits.
#[derive(Debug, Default)]
pub(crate) struct LimitedQueues(Mutex<HashMap<String, Seen>>);

impl LimitedQueues {
    /// `look` at what this process last saw of `queue`, if it saw it with
    /// limits.
    fn seen<T>(&self, queue: &str, look: impl FnOnce(&Seen) -> T) -> Option<T> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(queue)
            .map(look)
    }

    pub(crate) fn contains(&self, queue: &str) -> bool {
        self.seen(queue, |_| ()).is_some()
    }

    /// The turn of `queue` if this process last saw it with a rate limit.
    pub(crate) fn turn(&self, queue: &str) -> Option<Turn> {
        self.seen(queue, |seen| seen.turn.clone()).flatten()
    }

    /// The gate of `queue`'s row if this process last saw it with limits.
    pub(crate) fn gate(&self, queue: &str) -> Option<Gate> {
        self.seen(queue, |seen| seen.gate.clone())
    }

    /// Whether this process last saw `queue`'s claims take its groups in
    /// turn.
    pub(crate) fn grouped(&self, queue: &str) -> bool {
        self.seen(queue, |seen| seen.grouped).unwrap_or(false)
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
    fn a_limited_queue_keeps_one_gate_of_two_permits_while_it_stays_limited() {
        let q = LimitedQueues::default();
        assert!(
            q.gate("a").is_none(),
            "no gate for a queue not seen limited"
        );
        q.set("a", true, false, false);
        let first = q.gate("a");
        assert!(matches!(&first, Some(g) if g.available_permits() == AT_THE_ROW));
        q.set("a", true, true, true);
        let again = q.gate("a");
        assert!(matches!((&first, &again), (Some(a), Some(b)) if Arc::ptr_eq(a, b)));
        q.set("a", false, false, false);
        assert!(q.gate("a").is_none());
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
