//! Release and snooze (docs/spec.md §3): giving a task back unrun, now or later,
//! without counting the attempt.

use std::time::Duration;

use spool_core::{FailRequest, QueueSettings, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// Release makes the task ready at once with the attempt given back, and
/// records no failure.
pub async fn release_makes_task_ready_without_counting_attempt(fx: Fixture) {
    let q = make_queue(&fx, "release", quick()).await;
    let id = enqueue(&fx, &q, job("work")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    let now = fx.store.now().await.unwrap();
    let retry = FailRequest {
        retry_at: Some(now),
        ..FailRequest::new("first try failed")
    };
    fx.store.fail(id, token(&t), retry).await.unwrap();
    let t = claim_id(&fx, &q, WORKER, id).await;
    assert_eq!(t.attempt, 2);

    fx.store.release(id, token(&t)).await.unwrap();
    let released = get(&fx, id).await;
    assert_eq!(released.state, TaskState::Ready);
    assert_eq!(released.attempt, 1, "the released attempt is not counted");
    assert_eq!(released.lease, None);
    assert_eq!(released.errors.len(), 1, "a release is not a failure");

    let again = claim_id(&fx, &q, OTHER_WORKER, id).await;
    assert_eq!(again.attempt, 2);
    assert_ne!(token(&again), token(&t));
}

/// Snooze schedules the task at the given time with the attempt given back.
pub async fn snooze_schedules_task_without_counting_attempt(fx: Fixture) {
    let q = make_queue(&fx, "snooze", quick()).await;
    let id = enqueue(&fx, &q, job("not yet")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    let delay = Duration::from_millis(300);
    let at = fx.store.now().await.unwrap().plus(delay);
    let snoozed = fx.store.snooze(id, token(&t), at).await.unwrap();
    assert_eq!(snoozed.state, TaskState::Scheduled);
    assert_eq!(snoozed.run_at, at);
    assert_eq!(snoozed.attempt, 0);
    assert_eq!(snoozed.lease, None);
    assert!(snoozed.errors.is_empty());
    assert_eq!(get(&fx, id).await, snoozed);
    claim_nothing(&fx, &q).await;

    fx.advance(delay + BEYOND).await;
    assert_eq!(claim_id(&fx, &q, WORKER, id).await.attempt, 1);
}

/// Release and snooze need the current token too.
pub async fn release_and_snooze_with_stale_token_are_lease_lost(fx: Fixture) {
    let q = make_queue(&fx, "release-stale", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("work")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    let before = get(&fx, id).await;
    let stale = wrong(token(&t));
    expect_code(fx.store.release(id, stale).await, "lease_lost");
    let later = fx.store.now().await.unwrap().plus(Duration::from_secs(60));
    expect_code(fx.store.snooze(id, stale, later).await, "lease_lost");
    assert_eq!(get(&fx, id).await, before);
    expect_code(fx.store.release(UNKNOWN_ID, token(&t)).await, "not_found");
}
