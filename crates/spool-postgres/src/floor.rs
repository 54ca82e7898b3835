//! Claim floors: where in a queue's claim order a claim starts to look.
//!
//! Why: a claim takes the first ready rows of `tasks_ready`, in claim order
//! `(priority, run_at, id)`. Each claim leaves the entries of the rows it
//! took at the front of that index, and while any transaction in the
//! database holds the xmin horizon (a long report, a forgotten `BEGIN`, a
//! replication slot) no scan may mark them dead and no VACUUM may remove
//! them: a claim that starts at the front walks every entry claimed since
//! the horizon was taken, and the walk grows by thousands a second. A
//! claim that starts at a floor below which nothing is ready walks none
//! of them.
//!
//! The floor is this process's, per queue: a `(priority, run_at)` that no
//! ready task is known to be below. Invariants:
//! - it only rises after a claim: to the last row the claim took, and no
//!   further than `LAG` before the claim statement's clock, so a task
//!   appended by an enqueue still in flight (its `run_at` is its
//!   statement's start) is above it;
//! - it falls at once when a task may have become ready below it: an
//!   enqueue of a higher priority than the floor's (the notification names
//!   the priority), or any change whose `run_at` is not "now" (retry,
//!   release, snooze, expiry, promotion, update, retry-all, transactional
//!   enqueue: the notification names no priority, the floor goes back to
//!   the front). Notifications reach other processes through the existing
//!   LISTEN/NOTIFY wake-ups ([`crate::wake`], [`crate::notifier`]);
//! - a rise computed by a claim that began before a fall is dropped
//!   (`epoch`), so a fall is never undone by a claim that could not see
//!   the task it announced;
//! - every `RESCAN` a claim starts at the front regardless, and after a
//!   failed claim or a lost LISTEN connection: what no notification
//!   covered (a claimer elsewhere that locked rows and then rolled back, an
//!   enqueue statement that ran longer than `LAG`) waits at most that long.
//!
//! Correctness never depends on the floor: a claim still locks each row
//! and re-checks it (`FOR UPDATE SKIP LOCKED`). Only the order between
//! processes can lag, within the bounds above.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

/// How far before its claim statement's clock a floor may rise.
pub(crate) const LAG: Duration = Duration::from_millis(250);
/// How often a claim looks from the front whatever the floor.
pub(crate) const RESCAN: Duration = Duration::from_secs(5);

/// A point in claim order: priority, then run_at.
pub(crate) type Key = (i16, SystemTime);

/// The front: before every task Spool stores (timestamps start in year 1).
pub(crate) fn front() -> Key {
    let year_one = Duration::from_millis(62_135_596_800_000);
    (
        i16::MIN,
        UNIX_EPOCH.checked_sub(year_one).unwrap_or(UNIX_EPOCH),
    )
}

/// What became ready, as far as floors care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ready {
    /// Tasks enqueued to run now, the smallest priority among them.
    Appended(i16),
    /// Anything else: the tasks may lie anywhere in claim order.
    Anywhere,
}

impl Ready {
    /// The notification payload for `queue` (queue names have no spaces).
    pub(crate) fn payload(self, queue: &str) -> String {
        match self {
            Ready::Appended(p) => format!("{queue} {p}"),
            Ready::Anywhere => queue.to_string(),
        }
    }

    /// The queue and what became ready, from a payload. A payload without
    /// a priority (or one this build cannot read) means anywhere.
    pub(crate) fn parse(payload: &str) -> (&str, Ready) {
        match payload.split_once(' ') {
            Some((queue, p)) => match p.parse() {
                Ok(p) => (queue, Ready::Appended(p)),
                Err(_) => (queue, Ready::Anywhere),
            },
            None => (payload, Ready::Anywhere),
        }
    }

    /// Combines two announcements of one queue.
    pub(crate) fn merge(self, other: Ready) -> Ready {
        match (self, other) {
            (Ready::Appended(a), Ready::Appended(b)) => Ready::Appended(a.min(b)),
            _ => Ready::Anywhere,
        }
    }
}

#[derive(Debug)]
struct Floor {
    key: Option<Key>,
    epoch: u64,
    from_front_at: Option<Instant>,
}

/// Where a claim started, to raise the floor by afterwards.
#[derive(Debug)]
pub(crate) struct Start {
    pub(crate) key: Key,
    epoch: u64,
}

/// This process's floors, per queue.
#[derive(Debug, Default)]
pub(crate) struct Floors {
    // A std mutex: held for a map operation, never across an await.
    queues: Mutex<HashMap<String, Floor>>,
    epoch: std::sync::atomic::AtomicU64,
}

impl Floors {
    fn next_epoch(&self) -> u64 {
        self.epoch
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .wrapping_add(1)
    }

    /// Where a claim of `queue` starts now.
    pub(crate) fn start(&self, queue: &str) -> Start {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let floor = queues.entry(queue.to_string()).or_insert(Floor {
            key: None,
            epoch: 0,
            from_front_at: None,
        });
        let stale = floor.from_front_at.is_none_or(|at| at.elapsed() >= RESCAN);
        match floor.key {
            Some(key) if !stale => Start {
                key,
                epoch: floor.epoch,
            },
            _ => {
                floor.from_front_at = Some(Instant::now());
                Start {
                    key: front(),
                    epoch: floor.epoch,
                }
            }
        }
    }

    /// After a claim that began at `start` took rows up to `last` (in claim
    /// order) by a statement whose clock read `now`.
    pub(crate) fn raise(&self, queue: &str, start: &Start, last: Key, now: SystemTime) {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(floor) = queues.get_mut(queue) else {
            return;
        };
        if floor.epoch != start.epoch {
            return;
        }
        let recent = now.checked_sub(LAG).unwrap_or(UNIX_EPOCH);
        let to = (last.0, last.1.min(recent)).max(start.key);
        // A look from the front tells where the floor is; one from the
        // floor only moves it up.
        if start.key == front() || floor.key.is_none_or(|k| k < to) {
            floor.key = Some(to);
        }
    }

    /// Tasks became ready in `queue` as `ready` says.
    pub(crate) fn lower(&self, queue: &str, ready: Ready) {
        let epoch = self.next_epoch();
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(floor) = queues.get_mut(queue) else {
            return;
        };
        match (ready, floor.key) {
            (Ready::Appended(p), Some((fp, _))) if p >= fp => {}
            (Ready::Appended(p), Some(_)) => {
                floor.key = Some((p, front().1));
                floor.epoch = epoch;
            }
            (_, _) => {
                floor.key = None;
                floor.epoch = epoch;
            }
        }
    }

    /// Every floor back to the front: after a failed claim, or when
    /// notifications may have been lost.
    pub(crate) fn reset(&self, queue: Option<&str>) {
        let epoch = self.next_epoch();
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, floor) in queues.iter_mut() {
            if queue.is_none_or(|q| q == name) {
                floor.key = None;
                floor.epoch = epoch;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn payloads_round_trip_and_merge() {
        for r in [Ready::Appended(-3), Ready::Appended(7), Ready::Anywhere] {
            assert_eq!(Ready::parse(&r.payload("a.b")), ("a.b", r));
        }
        assert_eq!(Ready::parse("q x"), ("q", Ready::Anywhere));
        assert_eq!(
            Ready::Appended(2).merge(Ready::Appended(-1)),
            Ready::Appended(-1)
        );
        assert_eq!(Ready::Appended(2).merge(Ready::Anywhere), Ready::Anywhere);
    }

    #[test]
    fn a_floor_rises_behind_the_clock_and_falls_for_what_may_lie_below() {
        let floors = Floors::default();
        let s = floors.start("q");
        assert_eq!(s.key, front(), "the first claim starts at the front");
        floors.raise("q", &s, (0, at(10_000)), at(10_100));
        assert_eq!(
            floors.start("q").key,
            (0, at(9_850)),
            "LAG before the clock"
        );

        // A claim that began before a fall does not undo it.
        let before = floors.start("q");
        floors.lower("q", Ready::Appended(-1));
        floors.raise("q", &before, (0, at(20_000)), at(20_000));
        assert_eq!(floors.start("q").key, (-1, front().1));

        // Same or lower priority appended: above the floor already.
        let s = floors.start("q");
        floors.raise("q", &s, (0, at(30_000)), at(30_000));
        floors.lower("q", Ready::Appended(0));
        floors.lower("q", Ready::Appended(4));
        assert_eq!(floors.start("q").key, (0, at(29_750)));

        floors.lower("q", Ready::Anywhere);
        let s = floors.start("q");
        assert_eq!(s.key, front());
        floors.raise("q", &s, (0, at(40_000)), at(40_000));
        floors.reset(None);
        assert_eq!(floors.start("q").key, front());
    }
}
