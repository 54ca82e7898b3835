//! Lease expiry (docs/spec.md §3): an expired lease makes the task ready again (its
//! attempt already counted), or dead on its last attempt, and records
//! "lease expired"; the expired token is refused.

use std::time::Duration;

use spool_core::{Ack, FailRequest, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

const LEASE_EXPIRED: &str = "lease expired";

/// After the lease passes the task is ready, and another worker claims it
/// with the next attempt and a new token.
pub async fn expired_lease_makes_task_ready_for_another_worker(fx: Fixture) {
    let q = make_queue(&fx, "expiry", quick()).await;
    let id = enqueue(&fx, &q, job("crashes").max_attempts(3)).await;
    let first = claim_id_leased(&fx, &q, WORKER, id, SHORT_LEASE).await;
    fx.advance(SHORT_LEASE + BEYOND).await;

    let expired = get(&fx, id).await;
    assert_eq!(expired.state, TaskState::Ready);
    assert_eq!(expired.attempt, 1, "the expired attempt stays counted");
    assert_eq!(expired.lease, None);
    let last = expired.errors.last().expect("the expiry is recorded");
    assert_eq!((last.attempt, last.message.as_str()), (1, LEASE_EXPIRED));

    let second = claim_id(&fx, &q, OTHER_WORKER, id).await;
    assert_eq!(second.attempt, 2);
    assert_eq!(second.lease.as_ref().unwrap().owner, OTHER_WORKER);
    assert_ne!(token(&second), token(&first));
}

/// An expiry on the last attempt makes the task dead.
pub async fn expired_lease_on_last_attempt_is_dead(fx: Fixture) {
    let q = make_queue(&fx, "expiry-last", quick()).await;
    let id = enqueue(&fx, &q, job("poison").max_attempts(1)).await;
    claim_id_leased(&fx, &q, WORKER, id, SHORT_LEASE).await;
    fx.advance(SHORT_LEASE + BEYOND).await;

    let dead = get(&fx, id).await;
    assert_eq!(dead.state, TaskState::Dead);
    assert_eq!(dead.lease, None);
    assert_eq!(failures(&dead), vec![(1, LEASE_EXPIRED)]);
    claim_nothing(&fx, &q).await;
    assert_eq!(stats_of(&fx, &q).await.counts.dead, 1);
}

/// Ack, fail, release, snooze and extend all refuse an expired lease's
/// token, even before anyone re-claims the task, and change nothing.
pub async fn expired_lease_token_is_refused_everywhere(fx: Fixture) {
    let q = make_queue(&fx, "expiry-stale", quick()).await;
    let id = enqueue(&fx, &q, job("slow").max_attempts(3)).await;
    let t = claim_id_leased(&fx, &q, WORKER, id, SHORT_LEASE).await;
    fx.advance(SHORT_LEASE + BEYOND).await;

    let stale = token(&t);
    let later = fx.store.now().await.unwrap().plus(Duration::from_secs(60));
    expect_code(fx.store.ack(id, stale, Ack::Done).await, "lease_lost");
    expect_code(
        fx.store.fail(id, stale, FailRequest::new("late")).await,
        "lease_lost",
    );
    expect_code(fx.store.release(id, stale).await, "lease_lost");
    expect_code(fx.store.snooze(id, stale, later).await, "lease_lost");
    expect_code(fx.store.extend(id, stale, SHORT_LEASE).await, "lease_lost");

    let seen = get(&fx, id).await;
    assert_eq!(seen.state, TaskState::Ready);
    assert_eq!(seen.attempt, 1);
    assert_eq!(seen.errors.len(), 1, "only the expiry is recorded");
}
