//! Ack (docs/spec.md §3, §7.1): completion deletes; only the current token counts;
//! reschedule re-arms; batch acks are independent.

use std::time::Duration;

use spool_core::{Ack, ListRequest, QueueSettings, StoreError, TaskRef, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// An ack deletes the task: it is gone from get, list, stats and claims.
pub async fn ack_deletes_the_task(fx: Fixture) {
    let q = make_queue(&fx, "acking", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("work")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    fx.store.ack(id, token(&t), Ack::Done).await.unwrap();
    expect_code(fx.store.get(TaskRef::Id(id)).await, "not_found");
    assert!(list_all(&fx, ListRequest::new(q.clone())).await.is_empty());
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 0);
    claim_nothing(&fx, &q).await;
}

/// A token that is not the task's current lease token — wrong, or for a
/// task that is not leased — is lease_lost and changes nothing.
pub async fn ack_with_wrong_token_is_lease_lost_and_changes_nothing(fx: Fixture) {
    let q = make_queue(&fx, "wrong-token", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("leased")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    let before = get(&fx, id).await;
    expect_code(
        fx.store.ack(id, wrong(token(&t)), Ack::Done).await,
        "lease_lost",
    );
    assert_eq!(get(&fx, id).await, before);

    let ready = enqueue(&fx, &q, job("ready")).await;
    expect_code(
        fx.store.ack(ready, token(&t), Ack::Done).await,
        "lease_lost",
    );
    assert_eq!(get(&fx, ready).await.state, TaskState::Ready);

    fx.store.ack(id, token(&t), Ack::Done).await.unwrap();
}

/// An id that never existed, or whose task is gone, is not_found.
pub async fn ack_of_unknown_task_is_not_found(fx: Fixture) {
    let q = make_queue(&fx, "ack-unknown", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("work")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    expect_code(
        fx.store.ack(UNKNOWN_ID, token(&t), Ack::Done).await,
        "not_found",
    );
    fx.store.ack(id, token(&t), Ack::Done).await.unwrap();
    expect_code(fx.store.ack(id, token(&t), Ack::Done).await, "not_found");
}

/// Ack with reschedule_at re-arms the task: scheduled at that time with
/// attempt 0, claimable once it passes, under a new token.
pub async fn ack_with_reschedule_rearms_the_task(fx: Fixture) {
    let q = make_queue(&fx, "rearm", quick()).await;
    let id = enqueue(&fx, &q, job("periodic")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    let delay = Duration::from_millis(300);
    let at = fx.store.now().await.unwrap().plus(delay);
    fx.store
        .ack(id, token(&t), Ack::Reschedule(at))
        .await
        .unwrap();

    let rearmed = get(&fx, id).await;
    assert_eq!(rearmed.state, TaskState::Scheduled);
    assert_eq!(rearmed.attempt, 0);
    assert_eq!(rearmed.run_at, at);
    assert_eq!(rearmed.lease, None);
    claim_nothing(&fx, &q).await;

    fx.advance(delay + BEYOND).await;
    let again = claim_id(&fx, &q, WORKER, id).await;
    assert_eq!(again.attempt, 1);
    assert_ne!(token(&again), token(&t));
    expect_code(fx.store.ack(id, token(&t), Ack::Done).await, "lease_lost");
}

/// Fencing: once a lease has expired, its token no longer acks, before and
/// after another worker re-claims the task.
pub async fn ack_after_lease_expired_and_reclaimed_is_lease_lost(fx: Fixture) {
    let q = make_queue(&fx, "fencing", quick()).await;
    let id = enqueue(&fx, &q, job("slow")).await;
    let first = claim_id_leased(&fx, &q, WORKER, id, SHORT_LEASE).await;
    fx.advance(SHORT_LEASE + BEYOND).await;
    expect_code(
        fx.store.ack(id, token(&first), Ack::Done).await,
        "lease_lost",
    );

    let second = claim_id(&fx, &q, OTHER_WORKER, id).await;
    expect_code(
        fx.store.ack(id, token(&first), Ack::Done).await,
        "lease_lost",
    );
    let seen = get(&fx, id).await;
    assert_eq!(seen.state, TaskState::Leased);
    assert_eq!(seen.lease.unwrap().owner, OTHER_WORKER);
    fx.store.ack(id, token(&second), Ack::Done).await.unwrap();
}

/// Each item of a batch ack succeeds or fails on its own.
pub async fn ack_many_results_are_independent(fx: Fixture) {
    let q = make_queue(&fx, "ack-many", QueueSettings::default()).await;
    let created = enqueue_n(&fx, &q, 3).await;
    let claimed = claim(&fx, &q, WORKER, 3).await;
    assert_eq!(ids(&claimed), created);
    let done = enqueue(&fx, &q, job("done")).await;
    let done_task = claim_id(&fx, &q, WORKER, done).await;
    fx.store
        .ack(done, token(&done_task), Ack::Done)
        .await
        .unwrap();

    let acks = vec![
        (created[0], token(&claimed[0])),
        (created[1], wrong(token(&claimed[1]))),
        (UNKNOWN_ID, token(&claimed[0])),
        (created[2], token(&claimed[2])),
        (done, token(&done_task)),
    ];
    let results = fx.store.ack_many(acks).await.unwrap();
    let codes: Vec<Result<(), &str>> = results
        .iter()
        .map(|r| r.as_ref().map(|_| ()).map_err(StoreError::code))
        .collect();
    assert_eq!(
        codes,
        vec![
            Ok(()),
            Err("lease_lost"),
            Err("not_found"),
            Ok(()),
            Err("not_found")
        ]
    );
    expect_code(fx.store.get(TaskRef::Id(created[0])).await, "not_found");
    expect_code(fx.store.get(TaskRef::Id(created[2])).await, "not_found");
    assert_eq!(get(&fx, created[1]).await.state, TaskState::Leased);
}
