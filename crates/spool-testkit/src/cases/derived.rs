//! Derived states are prompt (docs/spec.md §7.1): once a task's run_at has passed or
//! its lease has expired, every view shows it `ready`.

use std::time::Duration;

use spool_core::{ListRequest, QueueName, TaskId, TaskState};

use crate::arrange::*;
use crate::fixture::Fixture;

/// Asserts that get, list (filtered and not) and stats all show `id` as the
/// one ready task of `q`, and `was` as empty.
async fn shows_ready(fx: &Fixture, q: &QueueName, id: TaskId, was: TaskState) {
    assert_eq!(get(fx, id).await.state, TaskState::Ready, "get");
    let listed = list_all(fx, ListRequest::new(q.clone())).await;
    let states: Vec<_> = listed.iter().map(|t| (t.id, t.state)).collect();
    assert_eq!(states, vec![(id, TaskState::Ready)], "list");
    for (state, want) in [(TaskState::Ready, vec![id]), (was, vec![])] {
        let req = ListRequest {
            state: Some(state),
            ..ListRequest::new(q.clone())
        };
        assert_eq!(ids(&list_all(fx, req).await), want, "list of {state}");
    }
    let stats = stats_of(fx, q).await;
    assert_eq!((stats.counts.ready, stats.counts.get(was)), (1, 0), "stats");
    let by_kind: Vec<u64> = stats.kinds.values().map(|c| c.ready).collect();
    assert_eq!(by_kind.iter().sum::<u64>(), 1, "stats per kind");
    assert!(stats.oldest_ready_age.is_some(), "stats: oldest ready age");
}

/// A task whose run_at has passed is ready everywhere, not scheduled.
pub async fn due_task_shows_ready_everywhere(fx: Fixture) {
    let q = make_queue(&fx, "due", quick()).await;
    let delay = Duration::from_millis(300);
    let id = enqueue(&fx, &q, job("soon").delay(delay)).await;
    assert_eq!(stats_of(&fx, &q).await.counts.scheduled, 1);
    fx.advance(delay + BEYOND).await;
    shows_ready(&fx, &q, id, TaskState::Scheduled).await;
}

/// A task whose lease has expired is ready everywhere, not leased.
pub async fn expired_lease_shows_ready_everywhere(fx: Fixture) {
    let q = make_queue(&fx, "lapsed", quick()).await;
    let id = enqueue(&fx, &q, job("abandoned").max_attempts(5)).await;
    claim_id_leased(&fx, &q, WORKER, id, SHORT_LEASE).await;
    assert_eq!(stats_of(&fx, &q).await.counts.leased, 1);
    fx.advance(SHORT_LEASE + BEYOND).await;
    shows_ready(&fx, &q, id, TaskState::Leased).await;
}
