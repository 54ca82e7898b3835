//! One queue's acquisition loop.
//!
//! The loop takes free slots, asks the store for that many tasks with a
//! long-poll wait, and starts a run per task, each holding one slot. So a
//! worker never holds a claimed task it cannot start now, and batches grow
//! by themselves under load: while a claim is in flight, finishing runs
//! free the slots the next claim takes. The long poll is the wake-up: the
//! store answers a waiting claim the moment a task is ready.
//!
//! A second claim may be in flight beside the first when half the pool (or
//! a full claim) is free: a durable claim waits for the store's log, and
//! overlapping two keeps the pool fed under load, while small pools still
//! claim in batches rather than one task at a time.
//!
//! A claim that comes back empty early (a store that cannot wait) is
//! followed by the idle pause, and a store error by the error backoff; the
//! loop never gives up by itself. When the worker stops, tasks that claims
//! still in flight bring back are released unrun.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt};
use spool_core::{ClaimRequest, StoreError, Task};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::pool::Pool;
use super::rate::RateLimiter;
use super::run;
use crate::backoff::ErrorBackoff;

/// Most claims in flight at once.
const MAX_IN_FLIGHT: usize = 2;
/// How long a stopping loop waits for its claims in flight: a claim the
/// store already granted answers within a log sync, and its tasks are then
/// released instead of waiting out their lease with an attempt burned. A
/// parked long poll is abandoned after it (the store skips a waiter whose
/// caller is gone).
const STOP_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// A claim in flight: its answer, the slots it holds, how many it asked for
/// and when it was sent.
type Claim = Pin<
    Box<
        dyn Future<
                Output = (
                    Result<Vec<Task>, StoreError>,
                    OwnedSemaphorePermit,
                    u32,
                    Instant,
                ),
            > + Send,
    >,
>;

/// The acquisition loop of `pool`, until the worker stops.
pub(crate) async fn acquire(pool: Arc<Pool>) {
    let shared = pool.shared.clone();
    tokio::select! {
        () = shared.clock_read.cancelled() => {}
        () = shared.stop.cancelled() => return,
    }
    let mut backoff = ErrorBackoff::new();
    let mut rate = pool.config.rate_limit.map(RateLimiter::new);
    let mut request =
        ClaimRequest::new(pool.queue.clone(), shared.id.clone()).wait(pool.config.wait);
    request.lease = pool.config.lease;
    let mut in_flight: FuturesUnordered<Claim> = FuturesUnordered::new();
    // No new claim before this (idle pause, error backoff).
    let mut hold_until = Instant::now();
    loop {
        let at_least = if in_flight.is_empty() {
            1
        } else {
            pool.second_claim_size()
        };
        let may_claim = in_flight.len() < MAX_IN_FLIGHT && Instant::now() >= hold_until;
        tokio::select! {
            biased;
            () = shared.stop.cancelled() => {
                give_back(&pool, in_flight).await;
                return;
            }
            Some((answer, permit, want, sent)) = in_flight.next() => {
                let pause = settle(&pool, answer, permit, want, sent, rate.as_mut(), &mut backoff);
                if let Some(pause) = pause {
                    hold_until = hold_until.max(Instant::now() + pause);
                }
            }
            () = tokio::time::sleep_until(hold_until), if Instant::now() < hold_until => {}
            Some(mut permit) = pool.free_slots(at_least), if may_claim => {
                let mut want = permit.num_permits() as u32;
                if let Some(rate) = rate.as_mut() {
                    want = tokio::select! {
                        n = rate.take(want) => n,
                        () = shared.stop.cancelled() => {
                            give_back(&pool, in_flight).await;
                            return;
                        }
                    };
                    // Slots the rate limit does not let us fill go back.
                    if let Some(kept) = permit.split(want as usize) {
                        drop(std::mem::replace(&mut permit, kept));
                    }
                }
                let store = shared.store.clone();
                let req = request.clone().max(want);
                in_flight.push(Box::pin(async move {
                    let sent = Instant::now();
                    (store.claim(req).await, permit, want, sent)
                }));
            }
        }
    }
}

/// Releases what the claims still in flight bring back within the grace.
async fn give_back(pool: &Pool, mut in_flight: FuturesUnordered<Claim>) {
    let grace = tokio::time::sleep(STOP_GRACE);
    tokio::pin!(grace);
    let mut claimed = Vec::new();
    loop {
        tokio::select! {
            next = in_flight.next() => match next {
                Some((answer, ..)) => claimed.extend(answer.unwrap_or_default()),
                None => break,
            },
            () = &mut grace => break,
        }
    }
    let store = &pool.shared.store;
    let releases = claimed.iter().filter_map(|task| {
        let token = task.lease.as_ref()?.token;
        Some(async move { (task.id, store.release(task.id, token).await) })
    });
    for (id, result) in join_all(releases).await {
        match result {
            Ok(()) => {
                pool.metrics.releases.increment(1);
                pool.shared.released.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => {
                tracing::warn!(task = id.0, error = %e, "could not give back a task claimed while stopping")
            }
        }
    }
}

/// Starts a run per claimed task. Returns how long to hold off the next
/// claim, if at all.
fn settle(
    pool: &Arc<Pool>,
    answer: Result<Vec<Task>, StoreError>,
    mut permit: OwnedSemaphorePermit,
    want: u32,
    sent: Instant,
    rate: Option<&mut RateLimiter>,
    backoff: &mut ErrorBackoff,
) -> Option<std::time::Duration> {
    match answer {
        Ok(tasks) => {
            backoff.reset();
            if let Some(rate) = rate {
                rate.refund(want.saturating_sub(tasks.len() as u32));
            }
            // An empty answer long before the wait was up: the store did
            // not hold the poll, so do not spin on it.
            let wait = pool.config.wait;
            let early = tasks.is_empty() && (wait.is_zero() || sent.elapsed() < wait / 2);
            for task in tasks {
                let Some(slot) = permit.split(1) else {
                    tracing::error!(queue = %pool.queue, "the store returned more tasks than asked for");
                    break;
                };
                tokio::spawn(run::run(pool.clone(), task, slot));
            }
            early.then_some(pool.config.idle_poll)
        }
        Err(e) => {
            if let Some(rate) = rate {
                rate.refund(want);
            }
            let wait = backoff.next_delay();
            tracing::warn!(queue = %pool.queue, error = %e, retry_in = ?wait, "claim failed");
            Some(wait)
        }
    }
}
