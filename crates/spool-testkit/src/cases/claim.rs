//! Claim (docs/spec.md §3, §7.1): order, max, pause, run_at, what a claim does to a
//! task, how long its lease is, and what a claim may ask.

use std::time::Duration;

use spool_core::{ClaimRequest, FailRequest, QueueSettings, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// Tasks come out by priority (lower first), then run_at, then id, within
/// one claim and across claims.
pub async fn claim_takes_tasks_in_priority_run_at_id_order(fx: Fixture) {
    let q = make_queue(&fx, "order", QueueSettings::default()).await;
    let earlier = fx.store.now().await.unwrap().minus(Duration::from_secs(10));
    let a = enqueue(&fx, &q, job("a")).await;
    let b = enqueue(&fx, &q, job("b").run_at(earlier)).await;
    let c = enqueue(&fx, &q, job("c").priority(-1)).await;
    let d = enqueue(&fx, &q, job("d").priority(5)).await;
    let e = enqueue(&fx, &q, job("e")).await;
    let f = enqueue(&fx, &q, job("f").run_at(earlier)).await;

    assert_eq!(ids(&claim(&fx, &q, WORKER, 2).await), vec![c, b]);
    assert_eq!(ids(&claim(&fx, &q, WORKER, 10).await), vec![f, a, e, d]);
}

/// A claim takes at most `max` tasks.
pub async fn claim_respects_max(fx: Fixture) {
    let q = make_queue(&fx, "max", QueueSettings::default()).await;
    let created = enqueue_n(&fx, &q, 5).await;
    assert_eq!(ids(&claim(&fx, &q, WORKER, 3).await), created[..3]);
    assert_eq!(ids(&claim(&fx, &q, WORKER, 3).await), created[3..]);
    claim_nothing(&fx, &q).await;
}

/// A paused queue hands out nothing but still takes tasks; resuming hands
/// them out again.
pub async fn paused_queue_yields_nothing_until_resumed(fx: Fixture) {
    let q = make_queue(&fx, "pausing", QueueSettings::default()).await;
    let before = enqueue(&fx, &q, job("before the pause")).await;
    fx.store.set_paused(&q, true).await.unwrap();
    let during = enqueue(&fx, &q, job("during the pause")).await;
    claim_nothing(&fx, &q).await;
    assert!(fx.store.get_queue(&q).await.unwrap().paused);
    assert_eq!(get(&fx, before).await.state, TaskState::Ready);

    fx.store.set_paused(&q, false).await.unwrap();
    assert_eq!(ids(&claim(&fx, &q, WORKER, 10).await), vec![before, during]);
}

/// A task is not claimable before its run_at, and is once it has passed.
pub async fn scheduled_task_is_not_claimable_before_run_at(fx: Fixture) {
    let q = make_queue(&fx, "scheduled", quick()).await;
    let delay = Duration::from_millis(300);
    let id = enqueue(&fx, &q, job("later").delay(delay)).await;
    assert_eq!(get(&fx, id).await.state, TaskState::Scheduled);
    claim_nothing(&fx, &q).await;
    fx.advance(delay + BEYOND).await;
    claim_id(&fx, &q, WORKER, id).await;
}

/// A claim leases the task to the worker, counts the attempt and draws a
/// token no earlier claim had.
pub async fn claim_leases_counts_attempt_and_draws_fresh_token(fx: Fixture) {
    let q = make_queue(&fx, "claiming", quick()).await;
    let id = enqueue(&fx, &q, job("work")).await;
    let first = claim_id(&fx, &q, WORKER, id).await;
    assert_eq!(first.state, TaskState::Leased);
    assert_eq!(first.attempt, 1);
    let lease = first.lease.clone().unwrap();
    assert_eq!(lease.owner, WORKER);

    let seen = get(&fx, id).await;
    assert_eq!(seen.state, TaskState::Leased);
    assert_eq!(seen.attempt, 1);
    let seen_lease = seen.lease.unwrap();
    assert_eq!(seen_lease.owner, WORKER);
    assert_eq!(seen_lease.expires_at, lease.expires_at);

    let now = fx.store.now().await.unwrap();
    let retry = FailRequest {
        retry_at: Some(now),
        ..FailRequest::new("again")
    };
    fx.store.fail(id, lease.token, retry).await.unwrap();
    let second = claim_id(&fx, &q, OTHER_WORKER, id).await;
    assert_eq!(second.attempt, 2);
    assert_eq!(second.lease.as_ref().unwrap().owner, OTHER_WORKER);
    assert_ne!(
        token(&second),
        lease.token,
        "every claim draws a fresh token"
    );
}

/// The lease lasts what the claim asked for, or the queue's lease.
pub async fn claim_lease_is_requested_or_queue_lease(fx: Fixture) {
    let queue_lease = Duration::from_secs(45);
    let settings = QueueSettings {
        lease: queue_lease,
        ..quick()
    };
    let q = make_queue(&fx, "lease-length", settings).await;
    let created = enqueue_n(&fx, &q, 2).await;

    let (t, at) = timed(&fx, claim_id(&fx, &q, WORKER, created[0])).await;
    let expires = t.lease.unwrap().expires_at;
    at.assert_after("expires_at with the queue's lease", expires, queue_lease);

    let asked = Duration::from_secs(7);
    let claiming = claim_id_leased(&fx, &q, WORKER, created[1], asked);
    let (t, at) = timed(&fx, claiming).await;
    at.assert_after(
        "expires_at with the asked lease",
        t.lease.unwrap().expires_at,
        asked,
    );
}

/// A task's own lease_ms wins over both the claim's and the queue's lease.
pub async fn task_lease_ms_wins_over_claim_lease(fx: Fixture) {
    let q = make_queue(&fx, "own-lease", quick()).await;
    let own = Duration::from_millis(2500);
    let asked = enqueue(&fx, &q, job("asked").lease_ms(2500)).await;
    let default = enqueue(&fx, &q, job("default").lease_ms(2500)).await;

    let claiming = claim_id_leased(&fx, &q, WORKER, asked, Duration::from_secs(7));
    let (t, at) = timed(&fx, claiming).await;
    at.assert_after(
        "expires_at over the asked lease",
        t.lease.unwrap().expires_at,
        own,
    );

    let (t, at) = timed(&fx, claim_id(&fx, &q, WORKER, default)).await;
    at.assert_after(
        "expires_at over the queue lease",
        t.lease.unwrap().expires_at,
        own,
    );
}

/// Out-of-range claims are refused, never clamped, and take nothing; the
/// bounds themselves are accepted.
pub async fn claim_refuses_out_of_range_requests(fx: Fixture) {
    let q = make_queue(&fx, "claim-limits", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("waiting")).await;
    let base = || ClaimRequest::new(q.clone(), WORKER);
    let refused = [
        ("max 0", base().max(0)),
        ("max 1001", base().max(1001)),
        ("wait 30.001 s", base().wait(Duration::from_millis(30_001))),
        ("lease 0", base().lease(Duration::ZERO)),
        ("empty worker", ClaimRequest::new(q.clone(), "")),
        (
            "worker of 257 bytes",
            ClaimRequest::new(q.clone(), "w".repeat(257)),
        ),
    ];
    for (what, req) in refused {
        let result = fx.store.claim(req).await;
        assert!(
            matches!(&result, Err(e) if e.code() == "bad_request"),
            "a claim with {what} should be bad_request, got {result:?}"
        );
    }
    assert_eq!(get(&fx, id).await.state, TaskState::Ready);

    let bounds = ClaimRequest::new(q.clone(), "w".repeat(256))
        .max(1000)
        .wait(Duration::from_secs(30));
    assert_eq!(ids(&fx.store.claim(bounds).await.unwrap()), vec![id]);
}

/// A claim on a queue that does not exist finds nothing to do.
pub async fn claim_on_unknown_queue_is_empty(fx: Fixture) {
    claim_nothing(&fx, &queue_name("nobody-made-this")).await;
}
