//! List (docs/spec.md §3, §7.1): a queue's tasks by state, in id or attempts order,
//! page by page.

use std::collections::BTreeSet;
use std::time::Duration;

use spool_core::{ListOrder, ListRequest, QueueSettings, TaskId, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// A state filter lists exactly the tasks in that state; no filter lists
/// them all.
pub async fn list_filters_by_state(fx: Fixture) {
    let q = make_queue(&fx, "list-states", quick()).await;
    let dead = dead_task(&fx, &q, job("dead")).await;
    let leased = enqueue(&fx, &q, job("leased")).await;
    claim_id(&fx, &q, WORKER, leased).await;
    let ready = enqueue_n(&fx, &q, 2).await;
    let later = job("scheduled").delay(Duration::from_secs(3600));
    let scheduled = enqueue(&fx, &q, later).await;

    let expected = [
        (TaskState::Ready, ready.clone()),
        (TaskState::Scheduled, vec![scheduled]),
        (TaskState::Leased, vec![leased]),
        (TaskState::Dead, vec![dead]),
    ];
    for (state, want) in expected {
        let req = ListRequest {
            state: Some(state),
            ..ListRequest::new(q.clone())
        };
        let got = list_all(&fx, req).await;
        assert_eq!(ids(&got), want, "tasks listed as {state}");
        assert!(got.iter().all(|t| t.state == state));
    }
    let mut all = vec![dead, leased, ready[0], ready[1], scheduled];
    all.sort();
    assert_eq!(ids(&list_all(&fx, ListRequest::new(q.clone())).await), all);
}

/// Id order is ascending ids; attempts order is most attempts first, then id.
pub async fn list_orders_by_id_and_by_attempts(fx: Fixture) {
    let q = make_queue(&fx, "list-order", quick()).await;
    // Priorities make each task the next claimed while it is being failed.
    let a = enqueue(&fx, &q, job("a")).await;
    let b = enqueue(&fx, &q, job("b").priority(-1)).await;
    let c = enqueue(&fx, &q, job("c").priority(-2)).await;
    let d = enqueue(&fx, &q, job("d").priority(-3)).await;
    fail_times(&fx, &q, d, 2).await;
    fail_times(&fx, &q, c, 1).await;
    fail_times(&fx, &q, b, 2).await;

    let by_id = list_all(&fx, ListRequest::new(q.clone())).await;
    assert_eq!(ids(&by_id), vec![a, b, c, d]);
    let req = ListRequest {
        order: ListOrder::AttemptsDesc,
        ..ListRequest::new(q.clone())
    };
    let by_attempts = list_all(&fx, req).await;
    let seen: Vec<(TaskId, u32)> = by_attempts.iter().map(|t| (t.id, t.attempt)).collect();
    assert_eq!(seen, vec![(b, 2), (d, 2), (c, 1), (a, 0)]);
}

/// Following cursors yields every task exactly once, in either order.
pub async fn list_pages_return_every_task_once(fx: Fixture) {
    let q = make_queue(&fx, "list-pages", quick()).await;
    let failed = [
        enqueue(&fx, &q, job("most").priority(-3)).await,
        enqueue(&fx, &q, job("some").priority(-2)).await,
    ];
    fail_times(&fx, &q, failed[0], 2).await;
    fail_times(&fx, &q, failed[1], 1).await;
    let mut created: Vec<TaskId> = failed.to_vec();
    created.extend(enqueue_n(&fx, &q, 23).await);

    for order in [ListOrder::Id, ListOrder::AttemptsDesc] {
        let req = ListRequest {
            order,
            limit: 7,
            ..ListRequest::new(q.clone())
        };
        let listed = ids(&list_all(&fx, req).await);
        let unique: BTreeSet<TaskId> = listed.iter().copied().collect();
        assert_eq!(listed.len(), created.len(), "{order:?}: {listed:?}");
        assert_eq!(unique, created.iter().copied().collect(), "{order:?}");
    }
}

/// A page limit outside 1..=1000 is refused.
pub async fn list_refuses_out_of_range_limit(fx: Fixture) {
    let q = make_queue(&fx, "list-limits", QueueSettings::default()).await;
    enqueue(&fx, &q, job("one")).await;
    for limit in [0, 1001] {
        let req = ListRequest {
            limit,
            ..ListRequest::new(q.clone())
        };
        expect_code(fx.store.list(req).await, "bad_request");
    }
    let req = ListRequest {
        limit: 1000,
        ..ListRequest::new(q.clone())
    };
    assert_eq!(fx.store.list(req).await.unwrap().tasks.len(), 1);
}
