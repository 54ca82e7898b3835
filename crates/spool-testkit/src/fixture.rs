//! What every case gets: a fresh, empty store and control of its clock.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use spool_core::{ManualClock, Store};

/// A store under test and the way its time moves.
///
/// Build it with [`Fixture::new`]; [`Fixture::keep`] ties to it whatever the
/// store lives in (a temporary directory, a database, a server process).
pub struct Fixture {
    /// The store under test, fresh and empty when the case starts.
    pub store: Arc<dyn Store>,
    /// How the case moves the store's clock: by hand, or by sleeping.
    pub time: TimeControl,
    /// Dropped after `store` (fields drop in order), so a store shuts down
    /// before its directory or database goes away.
    guard: Option<Box<dyn Any + Send + Sync>>,
}

/// How a case moves the store's clock.
#[derive(Clone, Debug)]
pub enum TimeControl {
    /// The store reads this clock: cases move it by hand, so time-dependent
    /// cases run without waiting.
    Manual(Arc<ManualClock>),
    /// The store reads a wall clock (PostgreSQL's `now()`, a remote server's):
    /// cases sleep.
    Real,
}

/// How long [`Fixture::advance`] waits after moving a manual clock, so that a
/// store's background timer loop (the engine re-checks timers at least every
/// 50 ms) has noticed before the case looks.
const TIMER_NOTICE: Duration = Duration::from_millis(60);

/// How far a timestamp may stray from the window the case measured around
/// the operation. A manual clock only rounds to the millisecond; a wall-clock
/// store may truncate finer time differently from its `now()`.
const MANUAL_SLACK: Duration = Duration::from_millis(1);
const REAL_SLACK: Duration = Duration::from_millis(20);

impl Fixture {
    /// A fixture for `store`, whose clock moves as `time` says; tie what the
    /// store lives in to it with [`Fixture::keep`].
    pub fn new(store: Arc<dyn Store>, time: TimeControl) -> Self {
        Fixture {
            store,
            time,
            guard: None,
        }
    }

    /// Keeps `guard` alive until the case is over, then drops it after the
    /// store: e.g. the `TempDir` holding an engine's data directory.
    pub fn keep(mut self, guard: impl Any + Send + Sync) -> Self {
        self.guard = Some(Box::new(guard));
        self
    }

    /// Moves the store's clock forward by `d`.
    pub async fn advance(&self, d: Duration) {
        match &self.time {
            TimeControl::Manual(clock) => {
                clock.advance(d);
                tokio::time::sleep(TIMER_NOTICE).await;
            }
            TimeControl::Real => tokio::time::sleep(d).await,
        }
    }

    /// The tolerance for comparing store timestamps with measured windows.
    pub(crate) fn slack(&self) -> Duration {
        match self.time {
            TimeControl::Manual(_) => MANUAL_SLACK,
            TimeControl::Real => REAL_SLACK,
        }
    }
}

impl fmt::Debug for Fixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixture")
            .field("store", &"dyn Store")
            .field("time", &self.time)
            .field("guard", &self.guard.is_some())
            .finish()
    }
}
