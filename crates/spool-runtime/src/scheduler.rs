//! The scheduler: fires periodic schedules (docs/spec.md §5) against any store.
//!
//! It keeps the store's schedule list fresh (read again every second by
//! default, and at once when the store signals a schedule put or deleted,
//! `Store::schedule_changes`, so a new schedule's first tick is as prompt
//! as the later ones), sleeps until the next tick on the store's clock,
//! and calls
//! `Store::fire_schedule(name, tick)` for each schedule due. The store
//! guards each tick, so any number of schedulers on one store (one per
//! worker process, say) make one task per tick, and a dead scheduler holds
//! nothing back: the others fire. Missed ticks (downtime) collapse into the
//! latest one (`Schedule::due`). A tick's run is bounded by its task's lease
//! (the schedule's deadline), so a stuck run never holds the next tick back.

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use metrics::{counter, histogram};
use spool_core::{Schedule, Store, StoreError};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::ErrorBackoff;
use crate::clock::StoreClock;
use crate::error::StartError;
use crate::metrics::{FIRE_DELAY, TICKS_FIRED};

/// Fires the store's schedules. See the module docs.
pub struct Scheduler {
    store: Arc<dyn Store>,
    refresh: Duration,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("refresh", &self.refresh)
            .finish_non_exhaustive()
    }
}

/// A running scheduler; dropping it stops it.
#[must_use = "dropping a SchedulerHandle stops the scheduler"]
#[derive(Debug)]
pub struct SchedulerHandle {
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl SchedulerHandle {
    /// Stops firing and waits for a firing in progress to end.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for SchedulerHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Scheduler {
    /// A scheduler that fires the schedules of `store`, rereading them every
    /// second; start it with [`Scheduler::start`].
    pub fn new(store: Arc<dyn Store>) -> Self {
        Scheduler {
            store,
            refresh: Duration::from_secs(1),
        }
    }

    /// How often the schedule list (and the store's clock) is read again:
    /// how soon a new, changed or deleted schedule is noticed when the
    /// store does not signal changes (the embedded engine and PostgreSQL
    /// do). Default 1 s.
    pub fn refresh_every(mut self, every: Duration) -> Self {
        self.refresh = every.max(Duration::from_millis(10));
        self
    }

    /// Starts firing. Must be called from within a Tokio runtime.
    pub fn start(self) -> Result<SchedulerHandle, StartError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| StartError::NoRuntime)?;
        let stop = CancellationToken::new();
        let task = runtime.spawn(run(self, stop.clone()));
        Ok(SchedulerHandle {
            stop,
            task: Some(task),
        })
    }
}

/// Reads the store's clock and schedule list.
async fn refresh(store: &dyn Store, clock: &StoreClock) -> Result<Vec<Schedule>, StoreError> {
    clock.measure(store).await?;
    store.list_schedules().await
}

/// The fresh list, keeping ticks this process fired that the list (read
/// concurrently) may not show yet.
fn merge(old: &[Schedule], mut fresh: Vec<Schedule>) -> Vec<Schedule> {
    for s in &mut fresh {
        if let Some(o) = old.iter().find(|o| o.spec.name == s.spec.name) {
            s.last_fire_at = s.last_fire_at.max(o.last_fire_at);
        }
    }
    fresh
}

async fn run(scheduler: Scheduler, stop: CancellationToken) {
    let store = scheduler.store.as_ref();
    let clock = StoreClock::local();
    let mut schedules: Vec<Schedule> = Vec::new();
    let mut next_refresh = Instant::now();
    let mut list_backoff = ErrorBackoff::new();
    let mut fire_backoff = ErrorBackoff::new();
    let mut changes = store.schedule_changes();
    loop {
        if Instant::now() >= next_refresh {
            match refresh(store, &clock).await {
                Ok(fresh) => {
                    schedules = merge(&schedules, fresh);
                    list_backoff.reset();
                    next_refresh = Instant::now() + scheduler.refresh;
                }
                Err(e) => {
                    let wait = list_backoff.next_delay();
                    tracing::warn!(error = %e, retry_in = ?wait, "cannot read the schedules");
                    next_refresh = Instant::now() + wait;
                }
            }
        }
        let mut wake = next_refresh;
        if fire_due(store, &clock, &mut schedules).await {
            fire_backoff.reset();
        } else {
            wake = wake.min(Instant::now() + fire_backoff.next_delay());
        }
        if let Some(next) = schedules.iter().filter_map(Schedule::next_fire_at).min() {
            wake = wake.min(clock.surely_after(next));
        }
        tokio::select! {
            () = tokio::time::sleep_until(wake) => {}
            changed = changed(&mut changes) => {
                if changed {
                    next_refresh = Instant::now();
                } else {
                    // The store went away: poll from now on.
                    changes = None;
                }
            }
            () = stop.cancelled() => return,
        }
    }
}

/// Waits for the store's next schedule change; false if it can no longer
/// signal one. Never ready when the store does not signal changes.
async fn changed(changes: &mut Option<tokio::sync::watch::Receiver<()>>) -> bool {
    match changes {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// Fires every schedule due now, concurrently. False if a firing failed
/// (it is tried again after the error backoff).
async fn fire_due(store: &dyn Store, clock: &StoreClock, schedules: &mut Vec<Schedule>) -> bool {
    let now = clock.now();
    let due: Vec<(usize, spool_core::Timestamp)> = schedules
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.due(now).map(|tick| (i, tick)))
        .collect();
    if due.is_empty() {
        return true;
    }
    let calls = due
        .iter()
        .map(|&(i, tick)| store.fire_schedule(&schedules[i].spec.name, tick));
    let answers = join_all(calls).await;
    let mut ok = true;
    let mut gone = Vec::new();
    for (&(i, tick), answer) in due.iter().zip(answers) {
        let name = schedules[i].spec.name.to_string();
        match answer {
            Ok(fired) => {
                schedules[i].last_fire_at = Some(tick);
                if let Some(outcome) = fired {
                    let late = clock.now().since(tick);
                    tracing::debug!(schedule = %name, tick = tick.as_millis(), task = outcome.id.0, ?late, "fired");
                    counter!(TICKS_FIRED, "schedule" => name.clone()).increment(1);
                    histogram!(FIRE_DELAY, "schedule" => name).record(late.as_secs_f64());
                }
            }
            // Deleted since the list was read.
            Err(StoreError::NotFound) => gone.push(i),
            Err(e) => {
                tracing::warn!(schedule = %name, error = %e, "cannot fire the schedule");
                ok = false;
            }
        }
    }
    for i in gone.into_iter().rev() {
        schedules.remove(i);
    }
    ok
}
