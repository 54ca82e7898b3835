//! How much work a workload has left, shared by its workers: a count of
//! tasks to hand out, a deadline, and a stop switch for when one worker
//! fails so the others wind down instead of running on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct Budget {
    remaining: AtomicU64,
    done: AtomicU64,
    deadline: Instant,
    stopped: AtomicBool,
}

impl Budget {
    pub(crate) fn new(total: u64, limit: Duration) -> Budget {
        Budget {
            remaining: AtomicU64::new(total),
            done: AtomicU64::new(0),
            deadline: Instant::now() + limit,
            stopped: AtomicBool::new(false),
        }
    }

    /// Takes up to `max` units of work; 0 means stop.
    pub(crate) fn take(&self, max: u64) -> u64 {
        if self.is_over() {
            return 0;
        }
        let mut granted = 0;
        // `fetch_update` retries on contention; the closure must be pure.
        let _ = self
            .remaining
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                granted = left.min(max);
                (granted > 0).then(|| left - granted)
            });
        granted
    }

    /// Counts finished work (for the progress bar and the result).
    pub(crate) fn finish(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// True once the deadline passed or a worker failed.
    pub(crate) fn is_over(&self) -> bool {
        self.stopped.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }

    /// Tells every worker to stop.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_exactly_the_total() {
        let b = Budget::new(2500, Duration::from_secs(60));
        assert_eq!(b.take(1000), 1000);
        assert_eq!(b.take(1000), 1000);
        assert_eq!(b.take(1000), 500);
        assert_eq!(b.take(1000), 0);
    }

    #[test]
    fn stop_and_deadline_end_the_work() {
        let b = Budget::new(10, Duration::from_secs(60));
        b.stop();
        assert_eq!(b.take(1), 0);
        let expired = Budget::new(10, Duration::ZERO);
        assert!(expired.is_over());
        assert_eq!(expired.take(1), 0);
    }
}
