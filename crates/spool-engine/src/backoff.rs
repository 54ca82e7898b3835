//! When the engine may try a checkpoint again after one failed.
//!
//! A checkpoint that fails (often for want of space) is abandoned and its
//! file removed; starting the next at once would fail the same way, and on
//! a nearly full disk each attempt takes space the log needs. So attempts
//! back off: the n-th failure in a row waits `min × 2^(n-1)`, at most `max`;
//! a published checkpoint resets the count.

use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct Backoff {
    min: Duration,
    max: Duration,
    /// Failures since the last success.
    failures: u32,
    not_before: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(min: Duration, max: Duration) -> Backoff {
        Backoff {
            min,
            max: max.max(min),
            failures: 0,
            not_before: None,
        }
    }

    /// Whether an attempt may start at `now`.
    pub(crate) fn ready(&self, now: Instant) -> bool {
        self.not_before.is_none_or(|t| now >= t)
    }

    /// Records a failure at `now`; returns how long the next attempt waits.
    pub(crate) fn failed(&mut self, now: Instant) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let doublings = self.failures.saturating_sub(1).min(31);
        let delay = self.min.saturating_mul(1 << doublings).min(self.max);
        self.not_before = Some(now + delay);
        delay
    }

    pub(crate) fn succeeded(&mut self) {
        self.failures = 0;
        self.not_before = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_the_minimum_up_to_the_cap_and_a_success_resets_it() {
        let (min, max) = (Duration::from_secs(1), Duration::from_secs(300));
        let mut b = Backoff::new(min, max);
        let t = Instant::now();
        assert!(b.ready(t));
        let delays: Vec<u64> = (0..12).map(|_| b.failed(t).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert!(!b.ready(t + Duration::from_secs(299)));
        assert!(b.ready(t + max));
        b.succeeded();
        assert!(b.ready(t));
        assert_eq!(b.failed(t), min);
    }
}
