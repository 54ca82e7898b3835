//! Idempotency keys (docs/spec.md §3.1): a key deduplicates while its task lives and
//! for `dedup_window` after the task completed or was cancelled.

use std::time::Duration;

use spool_core::{
    Ack, EnqueueOutcome, FailRequest, QueueName, QueueSettings, TaskId, TaskKey, TaskRef,
};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// Enqueues one task with `k` and returns the single outcome.
async fn enqueue_key(fx: &Fixture, q: &QueueName, k: &TaskKey) -> EnqueueOutcome {
    let out = fx
        .store
        .enqueue(q, vec![job("again").key(k.clone())])
        .await
        .unwrap();
    assert_eq!(out.len(), 1);
    out[0]
}

fn duplicate_of(id: TaskId) -> EnqueueOutcome {
    EnqueueOutcome {
        id,
        duplicate: true,
    }
}

/// While a task with the key lives — ready, leased, dead or scheduled — a
/// second enqueue creates nothing and answers the first id.
pub async fn duplicate_key_while_live_returns_existing_id(fx: Fixture) {
    let q = make_queue(&fx, "dedup-live", quick()).await;
    let k = key("order-42");
    let first = enqueue(&fx, &q, job("first").key(k.clone())).await;
    assert_eq!(
        enqueue_key(&fx, &q, &k).await,
        duplicate_of(first),
        "while ready"
    );

    let t = claim_id(&fx, &q, WORKER, first).await;
    assert_eq!(
        enqueue_key(&fx, &q, &k).await,
        duplicate_of(first),
        "while leased"
    );

    let discard = FailRequest {
        discard: true,
        ..FailRequest::new("poison")
    };
    fx.store.fail(first, token(&t), discard).await.unwrap();
    assert_eq!(
        enqueue_key(&fx, &q, &k).await,
        duplicate_of(first),
        "while dead"
    );

    let later = key("order-43");
    let scheduled = job("later")
        .key(later.clone())
        .delay(Duration::from_secs(3600));
    let second = enqueue(&fx, &q, scheduled).await;
    assert_eq!(
        enqueue_key(&fx, &q, &later).await,
        duplicate_of(second),
        "while scheduled"
    );

    assert_eq!(
        stats_of(&fx, &q).await.counts.total(),
        2,
        "duplicates create nothing"
    );
    assert_eq!(get(&fx, first).await.payload.bytes.as_ref(), b"first");
}

/// The second use of a key inside one batch is a duplicate of the first.
pub async fn duplicate_key_within_one_batch(fx: Fixture) {
    let q = make_queue(&fx, "dedup-batch", QueueSettings::default()).await;
    let k = key("twice");
    let batch = vec![job("a").key(k.clone()), job("b"), job("c").key(k.clone())];
    let out = fx.store.enqueue(&q, batch).await.unwrap();
    assert!(!out[0].duplicate && !out[1].duplicate);
    assert_eq!(out[2], duplicate_of(out[0].id));
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 2);
    assert_eq!(get(&fx, out[0].id).await.payload.bytes.as_ref(), b"a");
}

/// After ack or cancel the key still deduplicates (within the default
/// 15-minute window), though the task itself is gone.
pub async fn key_deduplicates_after_ack_and_cancel(fx: Fixture) {
    let q = make_queue(&fx, "dedup-done", QueueSettings::default()).await;
    let acked_key = key("acked");
    let acked = enqueue(&fx, &q, job("acked").key(acked_key.clone())).await;
    let t = claim_id(&fx, &q, WORKER, acked).await;
    fx.store.ack(acked, token(&t), Ack::Done).await.unwrap();
    let by_key = TaskRef::Key(q.clone(), acked_key.clone());
    expect_code(fx.store.get(by_key).await, "not_found");
    assert_eq!(enqueue_key(&fx, &q, &acked_key).await, duplicate_of(acked));

    let cancelled_key = key("cancelled");
    let cancelled = enqueue(&fx, &q, job("cancelled").key(cancelled_key.clone())).await;
    fx.store.cancel(TaskRef::Id(cancelled)).await.unwrap();
    assert_eq!(
        enqueue_key(&fx, &q, &cancelled_key).await,
        duplicate_of(cancelled)
    );
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 0);
}

/// The window starts when the task completes, not when it was created: a
/// task that lived longer than the window still deduplicates right after it
/// completed.
pub async fn dedup_window_counts_from_completion(fx: Fixture) {
    let window = Duration::from_millis(500);
    let settings = QueueSettings {
        dedup_window: window,
        ..quick()
    };
    let q = make_queue(&fx, "dedup-window-start", settings).await;
    let k = key("long-lived");
    let id = enqueue(&fx, &q, job("long-lived").key(k.clone())).await;
    fx.advance(window + BEYOND).await;
    assert_eq!(
        enqueue_key(&fx, &q, &k).await,
        duplicate_of(id),
        "still live"
    );
    let t = claim_id(&fx, &q, WORKER, id).await;
    fx.store.ack(id, token(&t), Ack::Done).await.unwrap();
    assert_eq!(
        enqueue_key(&fx, &q, &k).await,
        duplicate_of(id),
        "just completed"
    );
}

/// Once the window has passed, the key creates a new task.
pub async fn key_is_free_again_after_dedup_window(fx: Fixture) {
    let window = Duration::from_millis(300);
    let settings = QueueSettings {
        dedup_window: window,
        ..quick()
    };
    let q = make_queue(&fx, "dedup-window-end", settings).await;
    let acked_key = key("acked");
    let acked = enqueue(&fx, &q, job("acked").key(acked_key.clone())).await;
    let t = claim_id(&fx, &q, WORKER, acked).await;
    fx.store.ack(acked, token(&t), Ack::Done).await.unwrap();
    let cancelled_key = key("cancelled");
    let cancelled = enqueue(&fx, &q, job("cancelled").key(cancelled_key.clone())).await;
    fx.store.cancel(TaskRef::Id(cancelled)).await.unwrap();

    fx.advance(window + BEYOND).await;
    for (k, old) in [(acked_key, acked), (cancelled_key, cancelled)] {
        let out = enqueue_key(&fx, &q, &k).await;
        assert!(!out.duplicate, "key {k} should be free after the window");
        assert!(out.id > cancelled, "a new task gets a new id, not {old}");
        let live = fx.store.get(TaskRef::Key(q.clone(), k)).await.unwrap();
        assert_eq!(live.id, out.id);
    }
}

/// The same key in two queues names two tasks.
pub async fn keys_are_per_queue(fx: Fixture) {
    let a = make_queue(&fx, "keys-a", QueueSettings::default()).await;
    let b = make_queue(&fx, "keys-b", QueueSettings::default()).await;
    let k = key("shared");
    let in_a = enqueue(&fx, &a, job("a").key(k.clone())).await;
    let in_b = enqueue(&fx, &b, job("b").key(k.clone())).await;
    assert_ne!(in_a, in_b);
    let got_a = fx.store.get(TaskRef::Key(a, k.clone())).await.unwrap();
    let got_b = fx.store.get(TaskRef::Key(b, k)).await.unwrap();
    assert_eq!((got_a.id, got_b.id), (in_a, in_b));
}
