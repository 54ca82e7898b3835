//! Whether something has held the xmin horizon for a while: the ring
//! turns by size only then (`crate::rotate`).
//!
//! Why it matters: with the horizon free, a generation's dead versions
//! are pruned and vacuumed as usual, and turning the ring by size (every
//! second or two at a few thousand tasks a second, since its indexes grow
//! whatever happens) made every connection plan its statements again
//! after each turn for nothing: 8-10 turns in 20 s, 2.4-3.4 s of planning
//! (docs/BENCHMARKS.md). With it held, nothing written is freed, and the
//! size is what bounds the table.
//!
//! How it is told, in `sql/rotate_due.sql`, with no privilege beyond the
//! store's own: each check of the ring answers the next XID to be
//! assigned, and this process keeps those answers as marks. A later
//! check then finds the horizon held when, from before a mark at least
//! [`HELD_FOR`] old, a transaction with an XID still runs (the check's
//! own snapshot's xmin is older than the mark: any role's writing
//! transaction, prepared ones too), or a session's snapshot is still
//! taken (`pg_stat_activity.backend_xmin`: the store's own role's
//! sessions, or every one where the role may read all statistics), or a
//! replication slot holds one (`pg_replication_slots.xmin`: a standby's
//! feedback). A reading session of another role, where that privilege
//! is missing, goes unseen: the ring then turns by time alone and the
//! table holds about three `rotate_interval`s of writes.
//!
//! Invariant: a mark is only ever a next XID this process read, with the
//! time it read it; until one is [`HELD_FOR`] old the horizon counts as
//! free.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How long something must have held the horizon for the ring to turn by
/// size: what holds it for less (a claim, a report of a moment) frees
/// what it kept soon after, and a turn for it would cost every connection
/// a new plan for little.
const HELD_FOR: Duration = Duration::from_millis(500);

/// The next XIDs this process's checks of the ring read, oldest first.
#[derive(Debug, Default)]
pub(crate) struct XidMarks(Mutex<VecDeque<(Instant, i64)>>);

impl XidMarks {
    /// The newest mark at least [`HELD_FOR`] old, if any.
    pub(crate) fn mark(&self, now: Instant) -> Option<i64> {
        let marks = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        marks
            .iter()
            .rev()
            .find(|(at, _)| now.duration_since(*at) >= HELD_FOR)
            .map(|(_, xid)| *xid)
    }

    /// Keeps `next_xid`, read at `at`, and drops the marks older than the
    /// newest that is already [`HELD_FOR`] old: they would tell of a
    /// horizon held for longer than needed.
    pub(crate) fn record(&self, at: Instant, next_xid: i64) {
        let mut marks = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        marks.push_back((at, next_xid));
        while marks
            .get(1)
            .is_some_and(|(second, _)| at.duration_since(*second) >= HELD_FOR)
        {
            marks.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_mark_until_one_is_old_enough_then_the_newest_such() {
        let marks = XidMarks::default();
        let t0 = Instant::now();
        marks.record(t0, 100);
        assert_eq!(marks.mark(t0 + HELD_FOR / 2), None);
        let step = HELD_FOR / 4;
        for i in 1..=8u32 {
            marks.record(t0 + step * i, 100 + i64::from(i));
        }
        let now = t0 + step * 8;
        assert_eq!(marks.mark(now), Some(104), "the one read HELD_FOR ago");
        let kept = marks.0.lock().map(|m| m.len()).unwrap_or(usize::MAX);
        assert!(kept <= 6, "older marks are dropped: {kept} kept");
    }
}
