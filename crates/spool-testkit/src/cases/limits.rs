//! Claim limits (docs/spec.md §4): a queue's limit on tasks leased at once
//! and its rate limit, enforced at claim, changed and removed live, and the
//! long polls they hold back woken when a slot frees or tokens refill.
//!
//! Rate limits here either refill too slowly to matter during a case (one
//! token a minute) or allow a burst of one, so that however late a step
//! runs on a wall-clock store, the count it sees is exact.

use std::time::{Duration, Instant};

use spool_core::{
    Ack, ClaimRequest, FailRequest, QueueChange, QueueName, QueueSettings, RateLimit, TaskId,
    TaskState,
};

use crate::arrange::*;
use crate::fixture::Fixture;

/// A rate limit that gives `burst` tasks at once, then one a minute.
pub(crate) fn slow(burst: u32) -> RateLimit {
    RateLimit {
        limit: 1,
        period: Duration::from_secs(60),
        burst,
    }
}

/// One task per [`TICK`], never more than one at once.
pub(crate) fn one_per_tick() -> RateLimit {
    RateLimit {
        limit: 1,
        period: TICK,
        burst: 1,
    }
}

/// The refill period of [`one_per_tick`].
pub(crate) const TICK: Duration = Duration::from_millis(200);
/// Time past a refill that cases leave for a store's clock granularity.
pub(crate) const REFILLED: Duration = Duration::from_millis(50);
/// The wait of the claims these cases expect to be woken.
pub(crate) const LONG_WAIT: Duration = Duration::from_secs(5);

fn limited(max_leased: Option<u32>, rate_limit: Option<RateLimit>) -> QueueSettings {
    QueueSettings {
        max_leased,
        rate_limit,
        ..QueueSettings::default()
    }
}

/// With at most 3 leased at once, a claim for 10 gets 3 and the next gets
/// none; each ack or release frees one slot, and a failure that schedules
/// a retry frees one too.
pub async fn max_leased_caps_tasks_leased_at_once(fx: Fixture) {
    let q = make_queue(&fx, "capped", limited(Some(3), None)).await;
    enqueue_n(&fx, &q, 10).await;
    let first = claim(&fx, &q, WORKER, 10).await;
    assert_eq!(first.len(), 3, "max_leased 3 lets a claim of 10 take 3");
    claim_nothing(&fx, &q).await;

    fx.store
        .ack(first[0].id, token(&first[0]), Ack::Done)
        .await
        .unwrap();
    assert_eq!(
        claim(&fx, &q, WORKER, 10).await.len(),
        1,
        "an ack frees one"
    );
    claim_nothing(&fx, &q).await;

    fx.store
        .release(first[1].id, token(&first[1]))
        .await
        .unwrap();
    assert_eq!(
        claim(&fx, &q, WORKER, 10).await.len(),
        1,
        "a release frees one"
    );
    claim_nothing(&fx, &q).await;

    let in_an_hour = fx
        .store
        .now()
        .await
        .unwrap()
        .plus(Duration::from_secs(3600));
    let later = FailRequest {
        retry_at: Some(in_an_hour),
        ..FailRequest::new("not now")
    };
    fx.store
        .fail(first[2].id, token(&first[2]), later)
        .await
        .unwrap();
    assert_eq!(
        claim(&fx, &q, WORKER, 10).await.len(),
        1,
        "a failure frees one"
    );
    assert_eq!(stats_of(&fx, &q).await.counts.leased, 3);
}

/// A lease that runs out frees its slot from the moment it expires.
pub async fn an_expired_lease_frees_its_slot(fx: Fixture) {
    let q = make_queue(&fx, "capped-expiry", limited(Some(1), None)).await;
    let made = enqueue_n(&fx, &q, 2).await;
    expiry_frees_a_slot(&fx, &q, made[0]).await;
}

/// A full bucket hands out its burst, even to one claim; then nothing until
/// it refills. A claim never takes more than its own `max`.
pub async fn rate_limit_hands_out_the_burst_then_holds(fx: Fixture) {
    let q = make_queue(&fx, "bursty", limited(None, Some(slow(5)))).await;
    enqueue_n(&fx, &q, 10).await;
    assert_eq!(claim(&fx, &q, WORKER, 2).await.len(), 2, "max still caps");
    assert_eq!(
        claim(&fx, &q, WORKER, 10).await.len(),
        3,
        "the burst's rest"
    );
    claim_nothing(&fx, &q).await;
    let s = stats_of(&fx, &q).await;
    assert_eq!((s.counts.ready, s.counts.leased), (5, 5));
}

/// Stats show the whole tokens left in a rate limit's bucket: full before
/// any claim, less what claims took; none on a queue without a limit.
pub async fn stats_show_the_rate_limit_tokens_left(fx: Fixture) {
    let q = make_queue(&fx, "metered-stats", limited(None, Some(slow(5)))).await;
    let plain = make_queue(&fx, "unmetered-stats", limited(Some(3), None)).await;
    enqueue_n(&fx, &q, 10).await;
    assert_eq!(stats_of(&fx, &q).await.rate_tokens, Some(5), "full");
    assert_eq!(claim(&fx, &q, WORKER, 2).await.len(), 2);
    assert_eq!(stats_of(&fx, &q).await.rate_tokens, Some(3));
    assert_eq!(claim(&fx, &q, WORKER, 10).await.len(), 3);
    assert_eq!(stats_of(&fx, &q).await.rate_tokens, Some(0), "spent");
    assert_eq!(stats_of(&fx, &plain).await.rate_tokens, None);
}

/// A bucket of one refills one task per period: each step, a period apart,
/// gets exactly one, however many it asks for.
pub async fn rate_limit_refills_at_its_rate(fx: Fixture) {
    let q = make_queue(&fx, "metered", limited(None, Some(one_per_tick()))).await;
    enqueue_n(&fx, &q, 10).await;
    for step in 0..4 {
        let got = claim(&fx, &q, WORKER, 10).await;
        assert_eq!(got.len(), 1, "step {step}: one token, one task");
        claim_nothing(&fx, &q).await;
        fx.advance(TICK + REFILLED).await;
    }
}

/// A long poll that the rate limit holds back returns once the bucket
/// refills, not at some later poll.
pub async fn a_rate_limited_long_poll_wakes_on_refill(fx: Fixture) {
    let q = make_queue(&fx, "metered-wait", limited(None, Some(one_per_tick()))).await;
    let made = enqueue_n(&fx, &q, 2).await;
    refill_wakes_a_held_back_claim(&fx, &q, made[0], made[1]).await;
}

/// Claims `first`, which spends the only token of a bucket of one that
/// refills every [`TICK`], then checks that a long poll the bucket holds
/// back gets `next` once it refills, not at some later poll.
pub(crate) async fn refill_wakes_a_held_back_claim(
    fx: &Fixture,
    q: &QueueName,
    first: TaskId,
    next: TaskId,
) {
    claim_id(fx, q, WORKER, first).await;
    let started = Instant::now();
    let store = fx.store.clone();
    let req = ClaimRequest::new(q.clone(), OTHER_WORKER)
        .max(10)
        .wait(LONG_WAIT);
    let waiting = tokio::spawn(async move { store.claim(req).await });
    fx.advance(TICK + REFILLED).await;
    let got = waiting.await.expect("the claim's task").expect("the claim");
    let waited = started.elapsed();
    assert_eq!(ids(&got), vec![next]);
    assert!(
        waited < TICK + WOKEN_WITHIN,
        "the claim waited {waited:?} for a bucket that refills in {TICK:?}"
    );
}

/// A long poll on a queue at its max_leased returns as soon as an ack
/// frees a slot.
pub async fn a_long_poll_on_a_full_queue_wakes_when_a_slot_frees(fx: Fixture) {
    let q = make_queue(&fx, "capped-wait", limited(Some(1), None)).await;
    let made = enqueue_n(&fx, &q, 2).await;
    let held = claim_id(&fx, &q, WORKER, made[0]).await;
    ack_wakes_a_held_back_claim(&fx, &q, &held, made[1]).await;
}

/// Limits change live: raising max_leased lets more in at once, removing it
/// lets everything in; a rate limit set on a busy queue holds at once, and
/// removing it lets everything in.
pub async fn limits_changed_live_take_effect(fx: Fixture) {
    let q = make_queue(&fx, "retuned", limited(Some(1), None)).await;
    enqueue_n(&fx, &q, 12).await;
    assert_eq!(claim(&fx, &q, WORKER, 10).await.len(), 1);
    let raise = QueueChange {
        max_leased: Some(Some(3)),
        ..QueueChange::default()
    };
    fx.store.put_queue(&q, raise).await.unwrap();
    assert_eq!(claim(&fx, &q, WORKER, 10).await.len(), 2, "3 at once now");
    let unlimited = QueueChange {
        max_leased: Some(None),
        rate_limit: Some(Some(slow(2))),
        ..QueueChange::default()
    };
    fx.store.put_queue(&q, unlimited).await.unwrap();
    assert_eq!(claim(&fx, &q, WORKER, 10).await.len(), 2, "the new burst");
    claim_nothing(&fx, &q).await;
    let free = QueueChange {
        rate_limit: Some(None),
        ..QueueChange::default()
    };
    fx.store.put_queue(&q, free).await.unwrap();
    assert_eq!(claim(&fx, &q, WORKER, 10).await.len(), 7, "no limit left");
    let s = stats_of(&fx, &q).await;
    assert_eq!((s.counts.ready, s.counts.leased), (0, 12));
}

/// Limits go through put and get like every setting; a change that names
/// neither keeps them, and one that removes one keeps the other.
pub async fn limits_round_trip_and_are_removed_one_at_a_time(fx: Fixture) {
    let wanted = limited(Some(4), Some(slow(3)));
    let q = make_queue(&fx, "limits-kept", wanted.clone()).await;
    assert_eq!(fx.store.get_queue(&q).await.unwrap(), wanted);
    let lease_only = QueueChange {
        lease: Some(Duration::from_secs(9)),
        ..QueueChange::default()
    };
    let kept = fx.store.put_queue(&q, lease_only).await.unwrap();
    assert_eq!((kept.max_leased, kept.rate_limit), (Some(4), Some(slow(3))));
    let no_rate = QueueChange {
        rate_limit: Some(None),
        ..QueueChange::default()
    };
    let now = fx.store.put_queue(&q, no_rate).await.unwrap();
    assert_eq!((now.max_leased, now.rate_limit), (Some(4), None));
    assert_eq!(fx.store.get_queue(&q).await.unwrap(), now);
}

/// Limits are about claims only: enqueues, and tasks already leased when a
/// limit is set, are untouched.
pub async fn a_limit_below_the_leased_count_takes_nothing_back(fx: Fixture) {
    let q = make_queue(&fx, "late-cap", QueueSettings::default()).await;
    enqueue_n(&fx, &q, 6).await;
    let held = claim(&fx, &q, WORKER, 4).await;
    let cap = QueueChange {
        max_leased: Some(Some(2)),
        ..QueueChange::default()
    };
    fx.store.put_queue(&q, cap).await.unwrap();
    claim_nothing(&fx, &q).await;
    for t in &held {
        assert_eq!(get(&fx, t.id).await.state, TaskState::Leased);
    }
    for t in &held[..2] {
        fx.store.ack(t.id, token(t), Ack::Done).await.unwrap();
    }
    claim_nothing(&fx, &q).await;
    fx.store
        .ack(held[2].id, token(&held[2]), Ack::Done)
        .await
        .unwrap();
    assert_eq!(claim(&fx, &q, WORKER, 10).await.len(), 1);
}
