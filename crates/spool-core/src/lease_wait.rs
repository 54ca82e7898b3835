//! Waiting for leases to be lost: what
//! [`Store::wait_leases_lost`](crate::Store::wait_leases_lost) shares
//! between stores (docs/spec.md §3, "wait_leases_lost").
//!
//! A lease is *held* while its task exists, is leased, carries that token
//! and has not expired; it is *lost* otherwise (the task was cancelled or
//! completed, the lease ran out or another worker holds the task now). A
//! wait answers at once with the lost ones among those asked about, or
//! blocks until one is lost or the wait is over.
//!
//! Every store answers the same way: look, and if nothing is lost, sleep
//! until a signal that leases may have been lost (a cancel, in this process
//! or, on a shared database, in any) or the next look, whichever comes
//! first. Invariant: the signal is taken before the look, so a cancel that
//! lands during the look is never missed ([`wait_until_lost`]).

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::StoreError;
use crate::task::TaskId;

/// How often a store that has a signal looks again without one: leases
/// that run out, or a signal lost on the way (a dropped NOTIFY), are
/// noticed within this.
pub const RECHECK: Duration = Duration::from_secs(1);

/// How often the trait's default implementation looks, having no signal.
pub(crate) const DEFAULT_POLL: Duration = Duration::from_millis(50);

/// Looks with `check` (which answers the lost leases' ids) until it finds
/// some or `wait` has passed, looking again when `signal` changes or every
/// `recheck`. Without a signal it simply polls every `recheck`.
pub async fn wait_until_lost<F, Fut>(
    mut signal: Option<watch::Receiver<()>>,
    recheck: Duration,
    wait: Duration,
    mut check: F,
) -> Result<Vec<TaskId>, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Vec<TaskId>, StoreError>>,
{
    let until = Instant::now() + wait;
    loop {
        if let Some(rx) = signal.as_mut() {
            rx.borrow_and_update();
        }
        let lost = check().await?;
        let now = Instant::now();
        if !lost.is_empty() || now >= until {
            return Ok(lost);
        }
        let next = until.min(now + recheck);
        match signal.as_mut() {
            Some(rx) => {
                tokio::select! {
                    changed = rx.changed() => {
                        // The sender is gone with its store: poll from now on.
                        if changed.is_err() {
                            signal = None;
                        }
                    }
                    () = tokio::time::sleep_until(next) => {}
                }
            }
            None => tokio::time::sleep_until(next).await,
        }
    }
}
