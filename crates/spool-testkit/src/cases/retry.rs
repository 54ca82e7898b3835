//! Retry (docs/spec.md §3): a dead task, or every dead task of a queue, becomes
//! ready with `attempt = 0`.

use std::time::Duration;

use spool_core::{FailRequest, QueueSettings, Task, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::{Fixture, TimeControl};

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

/// Revived tasks (by retry or retry_dead) and a failed one due again are
/// handed out like any other ready task, by (priority, run_at, id): a
/// revived task's run_at is the time of its revival, and where that ties
/// with tasks enqueued later, as on a clock that stands still, its lower id
/// puts it first.
pub async fn revived_tasks_are_claimed_in_priority_run_at_id_order(fx: Fixture) {
    let q = make_queue(&fx, "retry-order", quick()).await;
    let a = enqueue(&fx, &q, job("a")).await;
    let b = enqueue(&fx, &q, job("b")).await;
    let c = enqueue(&fx, &q, job("c")).await;
    let got = claim(&fx, &q, WORKER, 3).await;
    assert_eq!(ids(&got), vec![a, b, c]);
    for (t, discard) in got.iter().zip([true, true, false]) {
        let now = fx.store.now().await.unwrap();
        // RESP takes RETRYAT or DISCARD, not both: a discard names no time.
        let req = FailRequest {
            retry_at: (!discard).then_some(now),
            discard,
            ..FailRequest::new("no")
        };
        fx.store.fail(t.id, token(t), req).await.unwrap();
    }
    let d = enqueue(&fx, &q, job("d")).await;
    let low = enqueue(&fx, &q, job("low").priority(1)).await;
    assert_eq!(fx.store.retry(b).await.unwrap().state, TaskState::Ready);
    assert_eq!(fx.store.retry_dead(&q).await.unwrap(), 1);
    let e = enqueue(&fx, &q, job("e")).await;

    let mut expected: Vec<Task> = Vec::new();
    for id in [a, b, c, d, low, e] {
        let t = get(&fx, id).await;
        assert_eq!(t.state, TaskState::Ready, "task {id}");
        expected.push(t);
    }
    expected.sort_by_key(|t| (t.priority, t.run_at, t.id));
    let claimed = claim(&fx, &q, WORKER, 10).await;
    assert_eq!(ids(&claimed), ids(&expected));
    if let TimeControl::Manual(_) = fx.time {
        // The clock has not moved: every run_at is the same.
        assert_eq!(ids(&claimed), vec![a, b, c, d, e, low]);
    }
}

/// A failure just like the one before it (same attempt and message, on a
/// clock that stands still the same time too) is recorded as well: after a
/// retry the attempt counts from 0 again.
pub async fn a_failure_like_the_one_before_it_is_recorded(fx: Fixture) {
    let q = make_queue(&fx, "retry-errors", quick()).await;
    let id = dead_task(&fx, &q, job("poison")).await;
    fx.store.retry(id).await.unwrap();
    let t = claim_id(&fx, &q, WORKER, id).await;
    let req = FailRequest {
        discard: true,
        ..FailRequest::new("poison")
    };
    fx.store.fail(id, token(&t), req).await.unwrap();
    let task = get(&fx, id).await;
    assert_eq!(failures(&task), vec![(1, "poison"), (1, "poison")]);
}
