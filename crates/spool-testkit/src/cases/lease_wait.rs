//! Waiting for lost leases (docs/spec.md §3, wait_leases_lost): answers at
//! once with the leases no longer held, wakes within 100 ms when another
//! caller cancels a task, never reports a held lease, and answers empty
//! once its wait is over.
//!
//! Promptness is timed with the local monotonic clock, as the long-poll
//! cases do: it is how long a waiting worker is kept waiting.

use std::time::{Duration, Instant};

use spool_core::store::MAX_LEASE_WAIT;
use spool_core::store::MAX_WAIT;
use spool_core::{Ack, LeaseToken, QueueSettings, TaskId, TaskRef};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// The wait the cases ask for when they expect an answer long before it.
const LONG_WAIT: Duration = Duration::from_secs(5);
/// How soon a waiter must learn of a cancel, counted from the cancel's
/// answer (docs/spec.md §3).
const CANCEL_NOTICE: Duration = Duration::from_millis(100);
/// How soon an answer that needs no waiting must come, with room for a
/// store that is a round trip away.
const AT_ONCE: Duration = Duration::from_millis(1000);

/// Leases that are not held are reported at once, in request order:
/// cancelled, completed, expired, a wrong token, an id that never existed.
/// The held one is not.
pub async fn lease_wait_answers_at_once_with_the_lost_leases(fx: Fixture) {
    let q = make_queue(&fx, "lease-wait-lost", quick()).await;
    let ids = enqueue_n(&fx, &q, 4).await;
    let mut leases = Vec::new();
    for &id in &ids[..3] {
        leases.push((id, token(&claim_id(&fx, &q, WORKER, id).await)));
    }
    let expiring = claim_id_leased(&fx, &q, WORKER, ids[3], SHORT_LEASE).await;
    let (held, cancelled, acked) = (leases[0], leases[1], leases[2]);
    fx.store.cancel(TaskRef::Id(cancelled.0)).await.unwrap();
    fx.store.ack(acked.0, acked.1, Ack::Done).await.unwrap();
    fx.advance(SHORT_LEASE + BEYOND).await;

    let wrong_token = (held.0, wrong(held.1));
    let asked = [
        held,
        cancelled,
        acked,
        (ids[3], token(&expiring)),
        wrong_token,
        (UNKNOWN_ID, LeaseToken(1)),
    ];
    let started = Instant::now();
    let lost = fx.store.wait_leases_lost(&asked, LONG_WAIT).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(
        lost,
        vec![cancelled.0, acked.0, ids[3], held.0, UNKNOWN_ID],
        "every lease but the held one, in request order"
    );
    assert!(waited < AT_ONCE, "answered after {waited:?}");
}

/// A waiter on held leases wakes within 100 ms of another caller's cancel
/// of one of them, and reports only that one.
pub async fn lease_wait_wakes_when_a_task_is_cancelled(fx: Fixture) {
    let q = make_queue(&fx, "lease-wait-cancel", QueueSettings::default()).await;
    let ids = enqueue_n(&fx, &q, 2).await;
    let mut leases = Vec::new();
    for &id in &ids {
        leases.push((id, token(&claim_id(&fx, &q, WORKER, id).await)));
    }
    let store = fx.store.clone();
    let waiting = tokio::spawn({
        let leases = leases.clone();
        async move {
            let lost = store.wait_leases_lost(&leases, LONG_WAIT).await;
            (lost, Instant::now())
        }
    });
    // Give the wait time to start, so the cancel has to wake it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    fx.store.cancel(TaskRef::Id(ids[1])).await.unwrap();
    let cancelled = Instant::now();
    let (lost, woke) = waiting.await.unwrap();
    assert_eq!(lost.unwrap(), vec![ids[1]]);
    let late = woke.saturating_duration_since(cancelled);
    assert!(
        late < CANCEL_NOTICE,
        "the waiter learnt of the cancel {late:?} after it was answered"
    );
}

/// Held leases are never reported: the wait answers empty once it is over
/// (real time, even when the store's clock is manual).
pub async fn lease_wait_answers_empty_after_its_wait(fx: Fixture) {
    let q = make_queue(&fx, "lease-wait-held", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("held")).await;
    let lease = (id, token(&claim_id(&fx, &q, WORKER, id).await));
    let wait = Duration::from_millis(400);
    let started = Instant::now();
    let lost = tokio::time::timeout(
        wait + Duration::from_secs(5),
        fx.store.wait_leases_lost(&[lease], wait),
    )
    .await
    .expect("the wait should end")
    .unwrap();
    let waited = started.elapsed();
    assert!(lost.is_empty(), "a held lease was reported lost: {lost:?}");
    assert!(
        waited >= wait.mul_f64(0.9),
        "the wait gave up after {waited:?}, before {wait:?}"
    );
    let no_wait = fx.store.wait_leases_lost(&[lease], Duration::ZERO).await;
    assert_eq!(no_wait.unwrap(), Vec::<TaskId>::new());
}

/// No leases, too many, or too long a wait: `bad_request`.
pub async fn lease_wait_refuses_out_of_range_requests(fx: Fixture) {
    let one = [(UNKNOWN_ID, LeaseToken(1))];
    expect_code(
        fx.store.wait_leases_lost(&[], Duration::ZERO).await,
        "bad_request",
    );
    let too_many = vec![(UNKNOWN_ID, LeaseToken(1)); MAX_LEASE_WAIT + 1];
    expect_code(
        fx.store.wait_leases_lost(&too_many, Duration::ZERO).await,
        "bad_request",
    );
    let too_long = MAX_WAIT + Duration::from_millis(1);
    expect_code(
        fx.store.wait_leases_lost(&one, too_long).await,
        "bad_request",
    );
}
