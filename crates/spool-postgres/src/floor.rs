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
//! - it only rises after a claim, to the last row the claim took;
//! - it falls at once, after the change commits, to where a task may have
//!   become ready below it: an enqueue announces the smallest `(priority,
//!   run_at)` it appended (its tasks' `run_at` is the statement's clock,
//!   which the statement answers), so an enqueue that was still in flight
//!   when a claim rose past its `run_at` brings the floor back to exactly
//!   there; any change whose `run_at` is not "now" (retry, release,
//!   snooze, expiry, promotion, update, retry-all, transactional enqueue)
//!   announces no place, and the floor goes back to the front.
//!   Announcements reach other processes through the existing
//!   LISTEN/NOTIFY wake-ups ([`crate::wake`], [`crate::notifier`]);
//! - a rise computed by a claim that began before a fall is dropped
//!   (`epoch`), so a fall is never undone by a claim that could not see
//!   the task it announced;
//! - every `RESCAN` a claim starts at the front regardless, and after a
//!   failed claim or a lost LISTEN connection: what no announcement
//!   covered (a claimer elsewhere that locked rows and then rolled back, a
//!   lost notification) waits at most that long.
//!
//! Why exact falls rather than a floor kept some way behind the clock: an
//! enqueue in flight may commit a task below any rise, however far behind
//! the clock it stops, and every entry between that stop and the first
//! ready row is walked by every claim while a horizon is held (250 ms
//! behind, at 3,000 claims a second, was 750 entries a claim).
//!
//! Correctness never depends on the floor: a claim still locks each row
//! and re-checks it (`FOR UPDATE SKIP LOCKED`). Only the order between
//! processes can lag, within the bounds above.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

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
    /// Tasks enqueued to run now: the smallest `(priority, run_at)` among
    /// them.
    Appended(Key),
    /// Anything else: the tasks may lie anywhere in claim order.
    Anywhere,
}

impl Ready {
    /// The notification payload for `queue` (queue names have no spaces):
    /// `<queue> <priority> <run_at in ms since the epoch>`, or the bare
    /// name for anywhere.
    pub(crate) fn payload(self, queue: &str) -> String {
        match self {
            Ready::Appended((p, at)) => {
                let ms = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
                format!("{queue} {p} {ms}")
            }
            Ready::Anywhere => queue.to_string(),
        }
    }

    /// The queue and what became ready, from a payload. A payload without
    /// a place (or one this build cannot read) means anywhere; one with a
    /// priority alone, the front of that priority.
    pub(crate) fn parse(payload: &str) -> (&str, Ready) {
        let Some((queue, place)) = payload.split_once(' ') else {
            return (payload, Ready::Anywhere);
        };
        let (p, ms) = match place.split_once(' ') {
            Some((p, ms)) => (p, Some(ms)),
            None => (place, None),
        };
        let at = match ms.map(str::parse::<u64>) {
            Some(Ok(ms)) => Some(UNIX_EPOCH + Duration::from_millis(ms)),
            Some(Err(_)) => None,
            None => Some(front().1),
        };
        match (p.parse(), at) {
            (Ok(p), Some(at)) => (queue, Ready::Appended((p, at))),
            _ => (queue, Ready::Anywhere),
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

/// How many recent falls a floor remembers to cap the rises of claims that
/// began before them; a claim older than all of them rises not at all.
const FALLS_KEPT: usize = 64;

#[derive(Debug)]
struct Floor {
    key: Option<Key>,
    /// Recent falls, oldest first: the epoch each was announced at and the
    /// place it announced (the front for anywhere).
    falls: VecDeque<(u64, Key)>,
    /// The epoch of the newest fall no longer in `falls`.
    forgotten: u64,
    from_front_at: Option<Instant>,
}

impl Floor {
    /// Where a claim that began at `epoch` may raise the floor to at most:
    /// the lowest place announced since, if anything was.
    fn cap(&self, epoch: u64) -> Option<Key> {
        if self.forgotten > epoch {
            return Some(front());
        }
        self.falls
            .iter()
            .filter(|(e, _)| *e > epoch)
            .map(|(_, key)| *key)
            .min()
    }
}

/// Where a claim started, to raise the floor by afterwards.
#[derive(Debug)]
pub(crate) struct Start {
    pub(crate) key: Key,
    epoch: u64,
}

#[derive(Debug, Default)]
struct Inner {
    /// Counts falls: a claim that began at epoch `e` did not see what
    /// falls of a later epoch announced.
    epoch: u64,
    queues: HashMap<String, Floor>,
}

/// This process's floors, per queue.
#[derive(Debug, Default)]
pub(crate) struct Floors {
    // A std mutex: held for a map operation, never across an await.
    inner: Mutex<Inner>,
}

impl Floors {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where a claim of `queue` starts now.
    pub(crate) fn start(&self, queue: &str) -> Start {
        let mut inner = self.lock();
        let epoch = inner.epoch;
        let floor = inner.queues.entry(queue.to_string()).or_insert(Floor {
            key: None,
            falls: VecDeque::new(),
            forgotten: 0,
            from_front_at: None,
        });
        let stale = floor.from_front_at.is_none_or(|at| at.elapsed() >= RESCAN);
        match floor.key {
            Some(key) if !stale => Start { key, epoch },
            _ => {
                floor.from_front_at = Some(Instant::now());
                Start {
                    key: front(),
                    epoch,
                }
            }
        }
    }

    /// After a claim that began at `start` took rows up to `last` (in claim
    /// order). What was announced since it began stays at or above the
    /// floor: the claim may not have seen it.
    pub(crate) fn raise(&self, queue: &str, start: &Start, last: Key) {
        let mut inner = self.lock();
        let Some(floor) = inner.queues.get_mut(queue) else {
            return;
        };
        let seen = last.max(start.key);
        let to = floor.cap(start.epoch).map_or(seen, |cap| seen.min(cap));
        // A look from the front tells where the floor is; one from the
        // floor only moves it up.
        if start.key == front() || floor.key.is_none_or(|k| k < to) {
            floor.key = (to != front()).then_some(to);
        }
    }

    /// Tasks became ready in `queue` as `ready` says.
    pub(crate) fn lower(&self, queue: &str, ready: Ready) {
        let at = match ready {
            Ready::Appended(at) => at,
            Ready::Anywhere => front(),
        };
        self.fall(Some(queue), at);
    }

    /// Every floor back to the front: after a failed claim, or when
    /// notifications may have been lost.
    pub(crate) fn reset(&self, queue: Option<&str>) {
        self.fall(queue, front());
    }

    /// `queue`'s floor (every floor for `None`) falls to `at` if above it,
    /// and the rises of claims in flight are capped there.
    fn fall(&self, queue: Option<&str>, at: Key) {
        let mut inner = self.lock();
        inner.epoch += 1;
        let epoch = inner.epoch;
        for (name, floor) in inner.queues.iter_mut() {
            if queue.is_some_and(|q| q != name) {
                continue;
            }
            if floor.falls.len() == FALLS_KEPT {
                if let Some((e, _)) = floor.falls.pop_front() {
                    floor.forgotten = e;
                }
            }
            floor.falls.push_back((epoch, at));
            if floor.key.is_some_and(|k| at < k) {
                floor.key = (at != front()).then_some(at);
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
        for r in [
            Ready::Appended((-3, at(1_700_000_000_123))),
            Ready::Appended((7, at(0))),
            Ready::Anywhere,
        ] {
            assert_eq!(Ready::parse(&r.payload("a.b")), ("a.b", r));
        }
        assert_eq!(
            Ready::parse("q 4"),
            ("q", Ready::Appended((4, front().1))),
            "a priority alone: the front of that priority"
        );
        assert_eq!(Ready::parse("q x"), ("q", Ready::Anywhere));
        assert_eq!(Ready::parse("q 1 x"), ("q", Ready::Anywhere));
        assert_eq!(
            Ready::Appended((2, at(5))).merge(Ready::Appended((-1, at(9)))),
            Ready::Appended((-1, at(9)))
        );
        assert_eq!(
            Ready::Appended((0, at(5))).merge(Ready::Appended((0, at(3)))),
            Ready::Appended((0, at(3)))
        );
        assert_eq!(
            Ready::Appended((2, at(5))).merge(Ready::Anywhere),
            Ready::Anywhere
        );
    }

    #[test]
    fn a_floor_rises_to_the_last_claimed_and_falls_to_what_was_announced() {
        let floors = Floors::default();
        let s = floors.start("q");
        assert_eq!(s.key, front(), "the first claim starts at the front");
        floors.raise("q", &s, (0, at(10_000)));
        assert_eq!(floors.start("q").key, (0, at(10_000)));

        // An enqueue that was in flight below the floor brings it back.
        floors.lower("q", Ready::Appended((0, at(9_990))));
        assert_eq!(floors.start("q").key, (0, at(9_990)));
        // One above it changes nothing.
        floors.lower("q", Ready::Appended((0, at(12_000))));
        assert_eq!(floors.start("q").key, (0, at(9_990)));

        floors.lower("q", Ready::Anywhere);
        assert_eq!(floors.start("q").key, front());
        let s = floors.start("q");
        floors.raise("q", &s, (0, at(40_000)));
        floors.reset(None);
        assert_eq!(floors.start("q").key, front());
    }

    #[test]
    fn a_claim_never_rises_past_what_was_announced_after_it_began() {
        let floors = Floors::default();
        let s = floors.start("q");
        floors.raise("q", &s, (0, at(10_000)));

        // A claim began, then an enqueue it could not see committed (above
        // the floor), then the claim took rows past that enqueue's tasks.
        let before = floors.start("q");
        floors.lower("q", Ready::Appended((0, at(10_500))));
        floors.raise("q", &before, (0, at(11_000)));
        assert_eq!(floors.start("q").key, (0, at(10_500)), "capped, not lost");

        // A claim that began after the announcement saw it.
        let after = floors.start("q");
        floors.raise("q", &after, (0, at(11_000)));
        assert_eq!(floors.start("q").key, (0, at(11_000)));

        // An announcement below where the claim began wins over its rise.
        let before = floors.start("q");
        floors.lower("q", Ready::Appended((-1, at(1))));
        floors.raise("q", &before, (0, at(12_000)));
        assert_eq!(floors.start("q").key, (-1, at(1)));

        // A claim older than every remembered fall rises not at all.
        let old = floors.start("q");
        for ms in 0..=FALLS_KEPT as u64 {
            floors.lower("q", Ready::Appended((5, at(ms))));
        }
        floors.raise("q", &old, (9, at(0)));
        assert_eq!(floors.start("q").key, (-1, at(1)));
    }

    #[test]
    fn a_claim_from_the_front_sets_the_floor_even_below_it() {
        let floors = Floors::default();
        let s = floors.start("q");
        floors.raise("q", &s, (3, at(100)));
        // What the fallback look from the front found is where it is.
        let front_look = Start {
            key: front(),
            epoch: floors.start("q").epoch,
        };
        floors.raise("q", &front_look, (1, at(50)));
        assert_eq!(floors.start("q").key, (1, at(50)));
    }
}
