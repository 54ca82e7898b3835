//! Long poll (docs/spec.md §3): a claim with `wait` blocks until a task is ready or
//! the wait ends.
//!
//! These cases time the claim with the local monotonic clock: what they
//! check is how long a caller is kept waiting, which is real time whatever
//! clock the store judges tasks by.

use std::time::{Duration, Instant};

use spool_core::{ClaimRequest, QueueName, QueueSettings, StoreError, Task};
use tokio::task::JoinHandle;

use crate::arrange::*;
use crate::fixture::Fixture;

/// The wait the cases ask for when they expect to be woken early.
const LONG_WAIT: Duration = Duration::from_secs(5);
/// How soon after a task becomes ready a waiting claim must return: well
/// before [`LONG_WAIT`], with room for a store that polls.
const PROMPT: Duration = Duration::from_millis(2500);

/// Starts a claim that waits up to `wait`, in the background.
fn start_waiting(
    fx: &Fixture,
    q: &QueueName,
    wait: Duration,
) -> JoinHandle<Result<Vec<Task>, StoreError>> {
    let store = fx.store.clone();
    let req = ClaimRequest::new(q.clone(), WORKER).wait(wait);
    tokio::spawn(async move { store.claim(req).await })
}

/// A waiting claim returns as soon as a task is enqueued.
pub async fn long_poll_returns_when_a_task_is_enqueued(fx: Fixture) {
    let q = make_queue(&fx, "poll-enqueue", QueueSettings::default()).await;
    let started = Instant::now();
    let waiting = start_waiting(&fx, &q, LONG_WAIT);
    // Give the claim time to start waiting, so the enqueue has to wake it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let id = enqueue(&fx, &q, job("wake up")).await;
    let got = waiting.await.unwrap().unwrap();
    let waited = started.elapsed();
    assert_eq!(ids(&got), vec![id]);
    assert!(
        waited < PROMPT,
        "the claim waited {waited:?} though a task was enqueued after 200 ms"
    );
}

/// A waiting claim returns as soon as a scheduled task becomes due.
pub async fn long_poll_returns_when_a_scheduled_task_becomes_due(fx: Fixture) {
    let q = make_queue(&fx, "poll-due", quick()).await;
    let delay = Duration::from_millis(300);
    let id = enqueue(&fx, &q, job("soon").delay(delay)).await;
    let started = Instant::now();
    let waiting = start_waiting(&fx, &q, LONG_WAIT);
    fx.advance(delay + BEYOND).await;
    let got = waiting.await.unwrap().unwrap();
    let waited = started.elapsed();
    assert_eq!(ids(&got), vec![id]);
    assert!(
        waited < PROMPT,
        "the claim waited {waited:?} though the task was due after {delay:?}"
    );
}

/// With nothing to hand out, a waiting claim answers empty once its wait
/// (real time, even when the store's clock is manual) has passed.
pub async fn long_poll_returns_empty_after_wait(fx: Fixture) {
    let q = make_queue(&fx, "poll-empty", QueueSettings::default()).await;
    let wait = Duration::from_millis(400);
    let started = Instant::now();
    let req = ClaimRequest::new(q.clone(), WORKER).wait(wait);
    let got = tokio::time::timeout(wait + Duration::from_secs(5), fx.store.claim(req))
        .await
        .expect("the claim should end after its wait")
        .unwrap();
    let waited = started.elapsed();
    assert!(got.is_empty());
    assert!(
        waited >= wait.mul_f64(0.9),
        "the claim gave up after {waited:?}, before its wait of {wait:?}"
    );
}
