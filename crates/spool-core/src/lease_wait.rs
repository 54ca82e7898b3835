//! Waiting for leases to be lost: what [`Store::wait_leases_lost`] shares
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
use crate::store::{Store, MAX_WAIT};
use crate::task::{LeaseToken, TaskId, TaskState};

/// Most leases one wait may ask about.
pub const MAX_LEASE_WAIT: usize = 10_000;

/// How often a store that has a signal looks again without one: leases
/// that run out, or a signal lost on the way (a dropped NOTIFY), are
/// noticed within this.
pub const RECHECK: Duration = Duration::from_secs(1);

/// How often the trait's default implementation looks, having no signal.
pub(crate) const DEFAULT_POLL: Duration = Duration::from_millis(50);

/// Refuses a wait on no leases, on more than [`MAX_LEASE_WAIT`], or for
/// longer than [`MAX_WAIT`], rather than clamping (docs/spec.md §7.1).
pub fn validate_lease_wait(leases: usize, wait: Duration) -> Result<(), StoreError> {
    if leases == 0 || leases > MAX_LEASE_WAIT {
        return Err(StoreError::bad_request(format!(
            "leases must hold 1 to {MAX_LEASE_WAIT} items"
        )));
    }
    if wait > MAX_WAIT {
        return Err(StoreError::bad_request(format!(
            "wait_ms must be between 0 and {}",
            MAX_WAIT.as_millis()
        )));
    }
    Ok(())
}

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

/// The default implementation's look: one `get` per lease.
pub(crate) async fn lost_by_get<S: Store + ?Sized>(
    store: &S,
    leases: &[(TaskId, LeaseToken)],
) -> Result<Vec<TaskId>, StoreError> {
    let mut lost = Vec::new();
    for &(id, token) in leases {
        let held = match store.get(id.into()).await {
            Ok(task) => {
                task.state == TaskState::Leased && task.lease.is_some_and(|l| l.token == token)
            }
            Err(StoreError::NotFound) => false,
            Err(e) => return Err(e),
        };
        if !held {
            lost.push(id);
        }
    }
    Ok(lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_waits_are_refused() {
        let code = |n, w| validate_lease_wait(n, w).map_err(|e| e.code());
        assert_eq!(code(1, MAX_WAIT), Ok(()));
        assert_eq!(code(MAX_LEASE_WAIT, Duration::ZERO), Ok(()));
        assert_eq!(code(0, Duration::ZERO), Err("bad_request"));
        assert_eq!(code(MAX_LEASE_WAIT + 1, Duration::ZERO), Err("bad_request"));
        let over = MAX_WAIT + Duration::from_millis(1);
        assert_eq!(code(1, over), Err("bad_request"));
    }
}
