//! The lease watcher: one per worker, keeping `wait_leases_lost` long
//! polls open over every lease its runs hold, so that a cancel of a task
//! reaches its run within 100 ms (docs/spec.md §6, Cancellation).
//!
//! Looks are never abandoned: a look over a remote store is a request the
//! server would go on serving. Instead a look covers the leases no look in
//! flight covers, and a lease added later gets a look of its own; a look
//! ends when one of its leases is lost (a run's own ack counts: its task is
//! gone) or its wait is over, and the leases it covered still held are
//! looked at again, together. Looks start at most every [`MIN_GAP`], so
//! under load one look covers many new runs, and at most [`MAX_LOOKS`] are
//! in flight.
//!
//! A lost lease cuts its run off ([`Leases::lose`]); one the run already
//! gave up (its outcome known) is no longer registered and is ignored. A
//! store error backs off as claims do; the leases are looked at again
//! after it.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use spool_core::store::MAX_LEASE_WAIT;
use spool_core::{LeaseToken, StoreError, TaskId};
use tokio::time::Instant;

use super::Shared;
use crate::backoff::ErrorBackoff;

/// How long one look waits for a loss.
const WAIT: Duration = Duration::from_secs(10);
/// Least time between the starts of two looks.
const MIN_GAP: Duration = Duration::from_millis(20);
/// Most looks in flight at once.
const MAX_LOOKS: usize = 8;
/// How often a stopping watcher checks whether its runs are all done.
const STOP_CHECK: Duration = Duration::from_millis(50);

type Lease = (TaskId, LeaseToken);
type Look = Pin<Box<dyn Future<Output = (Vec<Lease>, Result<Vec<TaskId>, StoreError>)> + Send>>;

/// Watches the worker's leases until it has stopped and its runs are done.
pub(crate) async fn run(shared: Arc<Shared>) {
    let leases = shared.leases.clone();
    let mut looks: FuturesUnordered<Look> = FuturesUnordered::new();
    let mut covered: HashSet<Lease> = HashSet::new();
    let mut backoff = ErrorBackoff::new();
    // No new look before this (the gap, the error backoff).
    let mut hold_until = Instant::now();
    loop {
        let stopping = shared.stop.is_cancelled();
        if stopping && leases.is_empty() {
            return;
        }
        let may_look = looks.len() < MAX_LOOKS && Instant::now() >= hold_until;
        if may_look {
            let mut fresh: Vec<Lease> = leases
                .watched()
                .into_iter()
                .filter(|l| !covered.contains(l))
                .collect();
            fresh.truncate(MAX_LEASE_WAIT);
            if !fresh.is_empty() {
                covered.extend(fresh.iter().copied());
                looks.push(look(&shared, fresh));
                hold_until = Instant::now() + MIN_GAP;
            }
        }
        let held_off = Instant::now() < hold_until;
        let may_look = looks.len() < MAX_LOOKS && !held_off;
        tokio::select! {
            Some((asked, answer)) = looks.next() => {
                for l in &asked {
                    covered.remove(l);
                }
                match answer {
                    Ok(lost) => {
                        backoff.reset();
                        for id in lost {
                            if let Some(&(_, token)) = asked.iter().find(|(i, _)| *i == id) {
                                leases.lose(id, token);
                            }
                        }
                    }
                    Err(e) => {
                        let wait = backoff.next_delay();
                        tracing::warn!(error = %e, retry_in = ?wait, "cannot watch leases");
                        hold_until = hold_until.max(Instant::now() + wait);
                    }
                }
            }
            () = leases.added.notified(), if may_look => {}
            () = tokio::time::sleep_until(hold_until), if held_off => {}
            () = shared.stop.cancelled(), if !stopping => {}
            () = tokio::time::sleep(STOP_CHECK), if stopping => {}
        }
    }
}

/// One `wait_leases_lost` over `asked`, answering what it asked too.
fn look(shared: &Shared, asked: Vec<Lease>) -> Look {
    let store = shared.store.clone();
    Box::pin(async move {
        let answer = store.wait_leases_lost(&asked, WAIT).await;
        (asked, answer)
    })
}
