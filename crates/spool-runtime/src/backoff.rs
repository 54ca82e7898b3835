//! How long to wait after a store error before trying again: 100 ms,
//! doubling to 10 s, reset by the next success (docs/spec.md §6).
//!
//! A store that is down must not be hammered by every loop of every worker,
//! and one that comes back must be used again within seconds.

use std::time::Duration;

pub(crate) const FIRST: Duration = Duration::from_millis(100);
pub(crate) const MAX: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub(crate) struct ErrorBackoff {
    next: Duration,
}

impl ErrorBackoff {
    pub(crate) fn new() -> Self {
        ErrorBackoff { next: FIRST }
    }

    /// The wait before the next try; each call doubles the one after.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(MAX);
        d
    }

    pub(crate) fn reset(&mut self) {
        self.next = FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_ten_seconds_and_resets() {
        let mut b = ErrorBackoff::new();
        let waits: Vec<_> = (0..9).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(
            waits,
            [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]
        );
        b.reset();
        assert_eq!(b.next_delay(), FIRST);
    }
}
