//! Assertions the cases share: error codes, and times judged by the store's
//! own clock.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use spool_core::{StoreError, Timestamp};

use crate::fixture::Fixture;

/// Asserts that `result` failed with the stable error `code`; returns the error.
#[track_caller]
pub(crate) fn expect_code<T: Debug>(result: Result<T, StoreError>, code: &str) -> StoreError {
    match result {
        Ok(v) => panic!("expected the error {code}, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(e.code(), code, "expected the error {code}, got {e:?}");
            e
        }
    }
}

/// The store's clock read just before and just after an operation: whatever
/// "now" the store used lies between, on a manual clock and a wall clock
/// alike.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub(crate) before: Timestamp,
    pub(crate) after: Timestamp,
    slack: Duration,
}

/// Runs `op` between two reads of the store's clock.
pub(crate) async fn timed<T>(fx: &Fixture, op: impl Future<Output = T>) -> (T, Window) {
    let before = fx.store.now().await.expect("now");
    let out = op.await;
    let after = fx.store.now().await.expect("now");
    let window = Window {
        before,
        after,
        slack: fx.slack(),
    };
    (out, window)
}

impl Window {
    /// Asserts `t` is between `min` and `max` after the store's "now".
    #[track_caller]
    pub(crate) fn assert_offset(&self, what: &str, t: Timestamp, min: Duration, max: Duration) {
        let lo = self.before.plus(min).minus(self.slack);
        let hi = self.after.plus(max).plus(self.slack);
        assert!(
            lo <= t && t <= hi,
            "{what} should be {min:?}..={max:?} after now, i.e. {} ms..={} ms, but is {} ms \
             (clock read {} ms before and {} ms after the operation)",
            lo.as_millis(),
            hi.as_millis(),
            t.as_millis(),
            self.before.as_millis(),
            self.after.as_millis(),
        );
    }

    /// Asserts `t` is exactly `d` after the store's "now", within the window.
    #[track_caller]
    pub(crate) fn assert_after(&self, what: &str, t: Timestamp, d: Duration) {
        self.assert_offset(what, t, d, d);
    }

    /// Asserts `t` is the store's "now".
    #[track_caller]
    pub(crate) fn assert_now(&self, what: &str, t: Timestamp) {
        self.assert_offset(what, t, Duration::ZERO, Duration::ZERO);
    }
}

/// The backoff band of docs/spec.md §3: `d` with ±10% jitter.
pub(crate) fn jitter_band(d: Duration) -> (Duration, Duration) {
    (d.mul_f64(0.9), d.mul_f64(1.1))
}
