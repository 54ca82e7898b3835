//! A bound on wrong tokens tried at `/login`: guessing the token through
//! the form is held to [`PER_MINUTE`] tries a minute after a burst of
//! [`BURST`], for the whole server (behind a proxy every client has the
//! same address, so a per-address count would bound nothing). Right tokens
//! cost nothing, but while the bound is reached no token is checked, right
//! or wrong; the API's bearer header is not affected.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Wrong tries allowed at once.
pub(super) const BURST: f64 = 10.0;
/// Wrong tries allowed a minute after the burst.
pub(super) const PER_MINUTE: f64 = 10.0;

/// A token bucket of wrong tries.
#[derive(Debug)]
pub(super) struct Throttle {
    /// Tries left, and when they were counted.
    bucket: Mutex<(f64, Instant)>,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle {
            bucket: Mutex::new((BURST, Instant::now())),
        }
    }
}

impl Throttle {
    /// `Err(wait)` while no try is left: how long until one is.
    pub(super) fn check(&self) -> Result<(), Duration> {
        let mut b = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let refilled = b.0 + now.duration_since(b.1).as_secs_f64() * PER_MINUTE / 60.0;
        *b = (refilled.min(BURST), now);
        if b.0 >= 1.0 {
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - b.0) * 60.0 / PER_MINUTE))
        }
    }

    /// Counts a wrong try.
    pub(super) fn failed(&self) {
        let mut b = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        b.0 = (b.0 - 1.0).max(0.0);
    }
}
