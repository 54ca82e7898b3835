//! Retry (docs/spec.md §3): a dead task, or every dead task of a queue, becomes
//! ready with `attempt = 0`.

use std::time::Duration;

use spool_core::{QueueSettings, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// Retry makes a dead task ready with attempt 0, claimable at once.
pub async fn retry_makes_dead_task_ready(fx: Fixture) {
    let q = make_queue(&fx, "retry", quick()).await;
    let id = dead_task(&fx, &q, job("poison")).await;
    let revived = fx.store.retry(id).await.unwrap();
    assert_eq!(revived.state, TaskState::Ready);
    assert_eq!(revived.attempt, 0);
    assert_eq!(revived.lease, None);
    assert_eq!(get(&fx, id).await.state, TaskState::Ready);
    assert_eq!(claim_id(&fx, &q, WORKER, id).await.attempt, 1);
}

/// Only dead tasks can be retried: others are bad_request and unchanged;
/// an unknown id is not_found.
pub async fn retry_of_task_that_is_not_dead_is_bad_request(fx: Fixture) {
    let q = make_queue(&fx, "retry-alive", QueueSettings::default()).await;
    let leased = enqueue(&fx, &q, job("leased")).await;
    claim_id(&fx, &q, WORKER, leased).await;
    let ready = enqueue(&fx, &q, job("ready")).await;
    let later = job("scheduled").delay(Duration::from_secs(3600));
    let scheduled = enqueue(&fx, &q, later).await;
    for id in [leased, ready, scheduled] {
        let before = get(&fx, id).await;
        expect_code(fx.store.retry(id).await, "bad_request");
        assert_eq!(get(&fx, id).await, before);
    }
    expect_code(fx.store.retry(UNKNOWN_ID).await, "not_found");
}

/// retry_dead revives every dead task of its queue, counts them, and leaves
/// other tasks and other queues alone.
pub async fn retry_dead_revives_every_dead_task_of_the_queue(fx: Fixture) {
    let q = make_queue(&fx, "retry-all", quick()).await;
    let other = make_queue(&fx, "retry-other", quick()).await;
    let first = dead_task(&fx, &q, job("dead 1")).await;
    let second = dead_task(&fx, &q, job("dead 2")).await;
    enqueue(&fx, &q, job("ready")).await;
    let elsewhere = dead_task(&fx, &other, job("dead elsewhere")).await;

    assert_eq!(fx.store.retry_dead(&q).await.unwrap(), 2);
    for id in [first, second] {
        let t = get(&fx, id).await;
        assert_eq!((t.state, t.attempt), (TaskState::Ready, 0));
    }
    assert_eq!(get(&fx, elsewhere).await.state, TaskState::Dead);
    let counts = stats_of(&fx, &q).await.counts;
    assert_eq!((counts.ready, counts.dead), (3, 0));
    assert_eq!(fx.store.retry_dead(&q).await.unwrap(), 0);
}
