//! Time as the store sees it.
//!
//! The store's clock is the only clock (docs/spec.md §1): workers never compare
//! `run_at` with their own clocks. A [`Timestamp`] is milliseconds since the
//! Unix epoch, UTC. The [`Clock`] trait lets tests move time by hand
//! ([`ManualClock`]) instead of sleeping.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The earliest representable instant; sorts before every real time.
    pub const MIN: Timestamp = Timestamp(i64::MIN);

    /// The instant `ms` milliseconds after the Unix epoch (before it, when
    /// negative).
    pub fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    /// Milliseconds since the Unix epoch; negative before it.
    pub fn as_millis(self) -> i64 {
        self.0
    }

    /// `self + d`, saturating instead of overflowing.
    pub fn plus(self, d: Duration) -> Self {
        Timestamp(self.0.saturating_add(duration_millis(d)))
    }

    /// `self - d`, saturating instead of overflowing.
    pub fn minus(self, d: Duration) -> Self {
        Timestamp(self.0.saturating_sub(duration_millis(d)))
    }

    /// How long after `earlier` this instant is; zero if it is not after it.
    pub fn since(self, earlier: Timestamp) -> Duration {
        let ms = self.0.saturating_sub(earlier.0);
        Duration::from_millis(u64::try_from(ms).unwrap_or(0))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({})", self.0)
    }
}

/// A duration in whole milliseconds, saturating at `i64::MAX`.
pub fn duration_millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A source of the store's current time.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time. Not necessarily monotonic: a wall clock can be set
    /// back.
    fn now(&self) -> Timestamp;
}

/// The operating system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Timestamp(duration_millis(since))
    }
}

/// A clock that moves only when told to; for tests.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `start` until it is moved.
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            now: AtomicI64::new(start.0),
        }
    }

    /// Starts at the current wall-clock time, so timestamps look real.
    pub fn starting_now() -> Self {
        Self::new(SystemClock.now())
    }

    /// Moves the clock forward by `d`, cut to whole milliseconds.
    pub fn advance(&self, d: Duration) {
        self.now.fetch_add(duration_millis(d), Ordering::SeqCst);
    }

    /// Puts the clock at `t`, which may be in its past.
    pub fn set(&self, t: Timestamp) {
        self.now.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.now.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Timestamp(i64::MAX - 1);
        assert_eq!(t.plus(Duration::from_secs(1)), Timestamp(i64::MAX));
        assert_eq!(Timestamp(5).since(Timestamp(10)), Duration::ZERO);
        assert_eq!(
            Timestamp(1500).since(Timestamp(500)),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Timestamp(1000));
        assert_eq!(c.now(), Timestamp(1000));
        c.advance(Duration::from_millis(250));
        assert_eq!(c.now(), Timestamp(1250));
    }
}
