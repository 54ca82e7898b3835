//! The store's clock, mapped onto this process's monotonic clock.
//!
//! The store's clock is the only clock (docs/spec.md §1): lease expiries, retry
//! times and schedule ticks are store timestamps. To sleep until one of them
//! the runtime needs the offset between the store's clock and
//! [`Instant`]: it asks the store for its time (`Store::now`) and takes the
//! answer to be the time at the middle of the round trip. Until the first
//! answer, the local wall clock stands in (exact for the embedded engine).
//! The mapping is measured again from time to time, so drift and a store
//! whose clock was stepped are followed.

use std::sync::Mutex;
use std::time::Duration;

use spool_core::{Clock, Store, StoreError, SystemClock, Timestamp};
use tokio::time::Instant;

#[derive(Debug, Clone, Copy)]
struct Anchor {
    /// The local instant at which the store's clock read `at`.
    instant: Instant,
    at: Timestamp,
    /// How far off the anchor may be: half the round trip, plus the
    /// store's millisecond truncation.
    uncertainty: Duration,
}

impl Anchor {
    fn instant_of(&self, t: Timestamp) -> Instant {
        if t >= self.at {
            self.instant + t.since(self.at)
        } else {
            let back = self.at.since(t);
            self.instant.checked_sub(back).unwrap_or(self.instant)
        }
    }
}

/// Both clocks read at one moment, to map several times with one reading.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    anchor: Anchor,
    /// This process's monotonic time at the reading.
    pub local: Instant,
}

impl Reading {
    /// The store's time at the reading.
    pub(crate) fn store_now(&self) -> Timestamp {
        let a = &self.anchor;
        a.at.plus(self.local.saturating_duration_since(a.instant))
    }

    /// The local instant at which the store's clock reads `t`.
    pub(crate) fn instant_of(&self, t: Timestamp) -> Instant {
        self.anchor.instant_of(t)
    }
}

#[derive(Debug)]
pub(crate) struct StoreClock {
    anchor: Mutex<Anchor>,
}

impl StoreClock {
    /// A clock that assumes the store's clock is this machine's.
    pub(crate) fn local() -> Self {
        StoreClock {
            anchor: Mutex::new(Anchor {
                instant: Instant::now(),
                at: SystemClock.now(),
                uncertainty: Duration::from_millis(1),
            }),
        }
    }

    fn anchor(&self) -> Anchor {
        // A poisoned lock only means another thread panicked between two
        // plain field writes: the anchor is still a valid value.
        *self.anchor.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the store for its time and anchors the mapping on the answer.
    pub(crate) async fn measure(&self, store: &dyn Store) -> Result<(), StoreError> {
        let sent = Instant::now();
        let at = store.now().await?;
        let rtt = sent.elapsed();
        let anchor = Anchor {
            instant: sent + rtt / 2,
            at,
            uncertainty: rtt / 2 + Duration::from_millis(1),
        };
        *self.anchor.lock().unwrap_or_else(|e| e.into_inner()) = anchor;
        Ok(())
    }

    /// Both clocks, now.
    pub(crate) fn read(&self) -> Reading {
        Reading {
            anchor: self.anchor(),
            local: Instant::now(),
        }
    }

    /// The store's time now, as best known here.
    pub(crate) fn now(&self) -> Timestamp {
        self.read().store_now()
    }

    /// The local instant at which the store's clock reads `t`.
    pub(crate) fn instant_of(&self, t: Timestamp) -> Instant {
        self.anchor().instant_of(t)
    }

    /// The first local instant at which the store's clock has surely
    /// reached `t`.
    pub(crate) fn surely_after(&self, t: Timestamp) -> Instant {
        self.instant_of(t) + self.anchor().uncertainty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_both_ways() {
        let c = StoreClock::local();
        let now = c.now();
        let later = now.plus(Duration::from_secs(5));
        let gap = c.instant_of(later) - c.instant_of(now);
        assert_eq!(gap, Duration::from_secs(5));
        assert!(c.surely_after(now) > c.instant_of(now));
        // Long before the anchor: clamped, never a panic.
        let _ = c.instant_of(Timestamp::MIN);
    }
}
