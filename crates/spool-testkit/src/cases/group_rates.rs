//! A rate limit for each task group (docs/spec.md §4): a queue's
//! `group_rate_limit` gives every group a token bucket of its own, with
//! the shape of a queue's rate limit, enforced at claim; tasks without a
//! group are not bound by it. Each group's bucket is kept while the group
//! is out of tasks, is refilled at its rate, wakes a long poll it holds
//! back, and starts full when the limit is set or changed.
//!
//! As in `limits.rs`, the limits here either refill too slowly to matter
//! during a case (one token a minute) or allow a burst of one, so that
//! however late a step runs on a wall-clock store, the count it sees is
//! exact.

use std::time::Duration;

use spool_core::{Ack, QueueChange, QueueName, QueueSettings, RateLimit};

use super::groups::{enqueue_group, groups_of};
use super::limits::{one_per_tick, refill_wakes_a_held_back_claim, slow, REFILLED, TICK};
use crate::arrange::*;
use crate::fixture::Fixture;

fn per_group(limit: RateLimit) -> QueueSettings {
    QueueSettings {
        group_rate_limit: Some(limit),
        ..QueueSettings::default()
    }
}

/// The groups of what one claim of up to 100 took, in name order.
async fn claimed_groups(fx: &Fixture, q: &QueueName) -> Vec<String> {
    let mut seen = groups_of(&claim(fx, q, WORKER, 100).await);
    seen.sort();
    seen
}

fn names(groups: &[&str]) -> Vec<String> {
    groups.iter().map(|g| g.to_string()).collect()
}

/// Each group hands out its own burst; tasks without a group are not
/// held; then nothing until the buckets refill.
pub async fn each_group_has_a_rate_limit_of_its_own(fx: Fixture) {
    let q = make_queue(&fx, "group-rated", per_group(slow(2))).await;
    enqueue_group(&fx, &q, Some("a"), 5).await;
    enqueue_group(&fx, &q, Some("b"), 5).await;
    enqueue_group(&fx, &q, None, 3).await;
    assert_eq!(
        claimed_groups(&fx, &q).await,
        names(&["", "", "", "a", "a", "b", "b"]),
        "two of each group, every task without a group"
    );
    claim_nothing(&fx, &q).await;
    let s = stats_of(&fx, &q).await;
    assert_eq!((s.counts.ready, s.counts.leased), (6, 7));
}

/// A queue's groups show the whole tokens left in each one's bucket: full
/// for a group no claim took from, less what claims took; none without a
/// group_rate_limit.
pub async fn groups_show_each_groups_tokens_left(fx: Fixture) {
    let q = make_queue(&fx, "group-tokens", per_group(slow(3))).await;
    let plain = make_queue(&fx, "group-untokened", QueueSettings::default()).await;
    for queue in [&q, &plain] {
        enqueue_group(&fx, queue, Some("a"), 5).await;
        enqueue_group(&fx, queue, Some("b"), 1).await;
    }
    let tokens = |groups: Result<Vec<spool_core::GroupStats>, _>| {
        groups
            .expect("groups")
            .into_iter()
            .map(|g| (g.group.as_str().to_owned(), g.rate_tokens))
            .collect::<Vec<_>>()
    };
    let a_and_b = |a, b| vec![("a".to_owned(), a), ("b".to_owned(), b)];
    assert_eq!(
        tokens(fx.store.groups(&q, 10).await),
        a_and_b(Some(3), Some(3))
    );
    // Two turns take a, b, then a again; b has no task left for a third.
    assert_eq!(claim(&fx, &q, WORKER, 3).await.len(), 3);
    assert_eq!(
        tokens(fx.store.groups(&q, 10).await),
        a_and_b(Some(1), Some(2))
    );
    assert_eq!(
        tokens(fx.store.groups(&plain, 10).await),
        a_and_b(None, None)
    );
}

/// A bucket of one refills one task per period, in every group at once.
pub async fn each_group_refills_at_its_rate(fx: Fixture) {
    let q = make_queue(&fx, "group-metered", per_group(one_per_tick())).await;
    enqueue_group(&fx, &q, Some("a"), 4).await;
    enqueue_group(&fx, &q, Some("b"), 4).await;
    for step in 0..3 {
        assert_eq!(
            claimed_groups(&fx, &q).await,
            names(&["a", "b"]),
            "step {step}: one token of each group"
        );
        claim_nothing(&fx, &q).await;
        fx.advance(TICK + REFILLED).await;
    }
}

/// A group that ran out of tasks keeps its spent bucket: a task of it
/// enqueued next is not handed out before the bucket refills.
pub async fn a_group_keeps_its_bucket_between_tasks(fx: Fixture) {
    let q = make_queue(&fx, "group-sparse", per_group(slow(1))).await;
    let first = enqueue_group(&fx, &q, Some("a"), 1).await;
    let got = claim_id(&fx, &q, WORKER, first[0]).await;
    fx.store
        .ack(got.id, token(&got), Ack::Done)
        .await
        .expect("ack");
    enqueue_group(&fx, &q, Some("a"), 1).await;
    claim_nothing(&fx, &q).await;
    enqueue_group(&fx, &q, Some("b"), 1).await;
    assert_eq!(
        claimed_groups(&fx, &q).await,
        names(&["b"]),
        "b has its own"
    );
}

/// A long poll that every group's bucket holds back returns once one
/// refills, not at some later poll.
pub async fn a_long_poll_held_back_by_a_group_wakes_on_refill(fx: Fixture) {
    let q = make_queue(&fx, "group-wait", per_group(one_per_tick())).await;
    let made = enqueue_group(&fx, &q, Some("a"), 2).await;
    refill_wakes_a_held_back_claim(&fx, &q, made[0], made[1]).await;
}

/// The limit round-trips, starts every bucket full when it changes, and
/// goes when removed.
pub async fn a_group_rate_limit_changed_live_takes_effect(fx: Fixture) {
    let q = make_queue(&fx, "group-changed", per_group(slow(1))).await;
    enqueue_group(&fx, &q, Some("a"), 6).await;
    assert_eq!(claimed_groups(&fx, &q).await, names(&["a"]));
    claim_nothing(&fx, &q).await;

    let wider = QueueChange {
        group_rate_limit: Some(Some(slow(2))),
        ..QueueChange::default()
    };
    let settings = fx.store.put_queue(&q, wider).await.expect("put_queue");
    assert_eq!(settings.group_rate_limit, Some(slow(2)));
    assert_eq!(
        fx.store
            .get_queue(&q)
            .await
            .expect("get_queue")
            .group_rate_limit,
        Some(slow(2))
    );
    assert_eq!(
        claimed_groups(&fx, &q).await,
        names(&["a", "a"]),
        "a changed limit starts full"
    );
    claim_nothing(&fx, &q).await;

    let removed = QueueChange {
        group_rate_limit: Some(None),
        ..QueueChange::default()
    };
    let settings = fx.store.put_queue(&q, removed).await.expect("put_queue");
    assert_eq!(settings.group_rate_limit, None);
    assert_eq!(claimed_groups(&fx, &q).await, names(&["a", "a", "a"]));
}

/// A group rate limit with a zero field is refused, named by its field.
pub async fn an_invalid_group_rate_limit_is_refused(fx: Fixture) {
    let q = make_queue(&fx, "group-invalid", QueueSettings::default()).await;
    for (bad, field) in [
        (
            RateLimit {
                limit: 0,
                ..slow(1)
            },
            "group_rate_limit.limit",
        ),
        (
            RateLimit {
                burst: 0,
                ..slow(1)
            },
            "group_rate_limit.burst",
        ),
        (
            RateLimit {
                period: Duration::ZERO,
                ..slow(1)
            },
            "group_rate_limit.period_ms",
        ),
    ] {
        let change = QueueChange {
            group_rate_limit: Some(Some(bad)),
            ..QueueChange::default()
        };
        let err = fx.store.put_queue(&q, change).await.unwrap_err();
        assert_eq!(err.code(), "bad_request", "{err}");
        assert!(err.to_string().contains(field), "{err}");
    }
}
