//! Cancel (docs/spec.md §3): deletes a task in any state, by id or by key; its lease
//! holder then finds it gone.

use std::time::Duration;

use spool_core::{Ack, FailRequest, ListRequest, QueueSettings, TaskRef, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// Ready, scheduled, leased and dead tasks can all be cancelled.
pub async fn cancel_deletes_in_any_state(fx: Fixture) {
    let q = make_queue(&fx, "cancel", quick()).await;
    let leased = enqueue(&fx, &q, job("leased")).await;
    claim_id(&fx, &q, WORKER, leased).await;
    let dead = dead_task(&fx, &q, job("dead")).await;
    let ready = enqueue(&fx, &q, job("ready")).await;
    let later = job("scheduled").delay(Duration::from_secs(3600));
    let scheduled = enqueue(&fx, &q, later).await;

    let cases = [
        (leased, TaskState::Leased),
        (dead, TaskState::Dead),
        (ready, TaskState::Ready),
        (scheduled, TaskState::Scheduled),
    ];
    for (id, state) in cases {
        assert_eq!(get(&fx, id).await.state, state);
        fx.store.cancel(TaskRef::Id(id)).await.unwrap();
        expect_code(fx.store.get(TaskRef::Id(id)).await, "not_found");
    }
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 0);
    assert!(list_all(&fx, ListRequest::new(q.clone())).await.is_empty());
    claim_nothing(&fx, &q).await;
}

/// After a cancel, the lease holder's token operations find the task gone.
pub async fn token_operations_after_cancel_are_not_found(fx: Fixture) {
    let q = make_queue(&fx, "cancel-leased", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("work")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    fx.store.cancel(TaskRef::Id(id)).await.unwrap();
    let tok = token(&t);
    expect_code(fx.store.ack(id, tok, Ack::Done).await, "not_found");
    expect_code(
        fx.store.fail(id, tok, FailRequest::new("x")).await,
        "not_found",
    );
    expect_code(fx.store.release(id, tok).await, "not_found");
    expect_code(
        fx.store.extend(id, tok, Duration::from_secs(5)).await,
        "not_found",
    );
    expect_code(fx.store.cancel(TaskRef::Id(id)).await, "not_found");
}

/// A live task can be cancelled by its (queue, key); others stay.
pub async fn cancel_by_key(fx: Fixture) {
    let q = make_queue(&fx, "cancel-key", QueueSettings::default()).await;
    let k = key("client-chosen");
    let id = enqueue(&fx, &q, job("doomed").key(k.clone())).await;
    let other = enqueue(&fx, &q, job("stays").key(key("other"))).await;
    fx.store
        .cancel(TaskRef::Key(q.clone(), k.clone()))
        .await
        .unwrap();
    expect_code(fx.store.get(TaskRef::Id(id)).await, "not_found");
    expect_code(fx.store.get(TaskRef::Key(q.clone(), k)).await, "not_found");
    assert_eq!(get(&fx, other).await.state, TaskState::Ready);
}

/// Cancelling what never existed is not_found.
pub async fn cancel_of_unknown_task_is_not_found(fx: Fixture) {
    let q = make_queue(&fx, "cancel-unknown", QueueSettings::default()).await;
    expect_code(fx.store.cancel(TaskRef::Id(UNKNOWN_ID)).await, "not_found");
    let missing = TaskRef::Key(q, key("no-such-key"));
    expect_code(fx.store.cancel(missing).await, "not_found");
}
