//! Stats (docs/spec.md §3, §7.1): counts per state and per kind, the oldest ready
//! age, the paused flag.

use std::time::Duration;

use spool_core::{Ack, KindCounts, QueueSettings, StateCounts, TaskRef};

use crate::arrange::*;
use crate::fixture::Fixture;

/// Counts per state and per kind are exact after a mix of operations;
/// completed and cancelled tasks count nowhere.
pub async fn stats_count_per_state_and_kind(fx: Fixture) {
    let q = make_queue(&fx, "counting", quick()).await;
    let email = kind("email");
    let sms = kind("sms");
    dead_task(&fx, &q, job("dead").kind(email.clone())).await;
    let leased = enqueue(&fx, &q, job("leased").kind(sms.clone()).priority(-1)).await;
    claim_id(&fx, &q, WORKER, leased).await;
    enqueue(&fx, &q, job("ready 1").kind(email.clone())).await;
    enqueue(&fx, &q, job("ready 2").kind(email.clone())).await;
    enqueue(&fx, &q, job("ready 3").kind(sms.clone())).await;
    let later = job("later")
        .kind(email.clone())
        .delay(Duration::from_secs(3600));
    enqueue(&fx, &q, later).await;
    let acked = enqueue(&fx, &q, job("acked").kind(sms.clone()).priority(-1)).await;
    let t = claim_id(&fx, &q, WORKER, acked).await;
    fx.store.ack(acked, token(&t), Ack::Done).await.unwrap();
    let cancelled = enqueue(&fx, &q, job("cancelled").kind(email.clone())).await;
    fx.store.cancel(TaskRef::Id(cancelled)).await.unwrap();

    let stats = stats_of(&fx, &q).await;
    let counts = |scheduled, ready, leased, dead| StateCounts {
        scheduled,
        ready,
        leased,
        dead,
        pending: 0,
    };
    assert_eq!(stats.counts, counts(1, 3, 1, 1));
    // A kind with nothing left may be listed with zeros or not at all.
    let kinds: KindCounts = stats
        .kinds
        .into_iter()
        .filter(|(_, c)| c.total() > 0)
        .collect();
    let expected: KindCounts = [(email, counts(1, 2, 0, 1)), (sms, counts(0, 1, 1, 0))]
        .into_iter()
        .collect();
    assert_eq!(kinds, expected);
    assert!(!stats.paused);
}

/// oldest_ready_age is how long the longest-waiting ready task has been
/// claimable, and absent when nothing is ready.
pub async fn stats_report_oldest_ready_age(fx: Fixture) {
    let q = make_queue(&fx, "waiting", QueueSettings::default()).await;
    assert_eq!(stats_of(&fx, &q).await.oldest_ready_age, None, "empty");
    let later = job("later").delay(Duration::from_secs(3600));
    enqueue(&fx, &q, later).await;
    assert_eq!(
        stats_of(&fx, &q).await.oldest_ready_age,
        None,
        "scheduled only"
    );

    let now = fx.store.now().await.unwrap();
    let oldest = now.minus(Duration::from_secs(5));
    enqueue(&fx, &q, job("oldest").run_at(oldest)).await;
    let newer = now.minus(Duration::from_secs(2));
    enqueue(&fx, &q, job("newer").run_at(newer)).await;
    let before = fx.store.now().await.unwrap();
    let age = stats_of(&fx, &q).await.oldest_ready_age;
    let after = fx.store.now().await.unwrap();
    let age = age.expect("ready tasks exist");
    let slack = fx.slack();
    let (lo, hi) = (before.since(oldest), after.since(oldest));
    assert!(
        lo.saturating_sub(slack) <= age && age <= hi + slack,
        "oldest_ready_age should be {lo:?}..={hi:?}, is {age:?}"
    );

    claim(&fx, &q, WORKER, 10).await;
    assert_eq!(stats_of(&fx, &q).await.oldest_ready_age, None, "all leased");
}

/// Stats show whether a queue is paused, however it was paused.
pub async fn stats_report_paused(fx: Fixture) {
    let q = make_queue(&fx, "pause-flag", QueueSettings::default()).await;
    assert!(!stats_of(&fx, &q).await.paused);
    fx.store.set_paused(&q, true).await.unwrap();
    assert!(stats_of(&fx, &q).await.paused);
    fx.store.set_paused(&q, false).await.unwrap();
    assert!(!stats_of(&fx, &q).await.paused);

    let paused = QueueSettings {
        paused: true,
        ..QueueSettings::default()
    };
    let p = make_queue(&fx, "born-paused", paused).await;
    assert!(stats_of(&fx, &p).await.paused);
}
