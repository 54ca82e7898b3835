//! Enqueue (docs/spec.md §2, §3, §7.1): ids, atomic batches, defaults, the fields a
//! producer sets, payloads and the payload limit.

use std::time::Duration;

use spool_core::{Ack, ListRequest, NewTask, Payload, QueueSettings, StoreError, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// docs/spec.md §7.1: a batch holds at most 10,000 tasks.
const MAX_BATCH: usize = 10_000;

/// Ids are unique and increase in creation order, within a batch and across
/// calls, and a completed task's id is never handed out again.
pub async fn enqueue_returns_unique_increasing_ids(fx: Fixture) {
    let q = make_queue(&fx, "ids", QueueSettings::default()).await;
    let mut created = Vec::new();
    for i in 0..3 {
        created.push(enqueue(&fx, &q, job(&format!("single {i}"))).await);
    }
    created.extend(enqueue_n(&fx, &q, 5).await);
    created.push(enqueue(&fx, &q, job("after the batch")).await);
    assert!(
        created.windows(2).all(|w| w[0] < w[1]),
        "ids should increase in creation order: {created:?}"
    );

    for t in claim(&fx, &q, WORKER, 100).await {
        fx.store.ack(t.id, token(&t), Ack::Done).await.unwrap();
    }
    let next = enqueue(&fx, &q, job("after every task completed")).await;
    let last = *created.last().unwrap();
    assert!(next > last, "id {next} reuses or precedes {last}");
}

/// One result per item, in request order, duplicates included.
pub async fn enqueue_batch_results_follow_request_order(fx: Fixture) {
    let q = make_queue(&fx, "batch-order", QueueSettings::default()).await;
    let existing = enqueue(&fx, &q, job("existing").key(key("taken"))).await;
    let batch = vec![
        job("first"),
        job("second").key(key("taken")),
        job("third"),
        job("fourth").key(key("fresh")),
    ];
    let out = fx.store.enqueue(&q, batch).await.unwrap();
    let dups: Vec<bool> = out.iter().map(|o| o.duplicate).collect();
    assert_eq!(dups, vec![false, true, false, false]);
    assert_eq!(out[1].id, existing, "a duplicate answers the existing id");
    assert!(existing < out[0].id && out[0].id < out[2].id && out[2].id < out[3].id);
    for (i, text) in [(0, "first"), (2, "third"), (3, "fourth")] {
        let t = get(&fx, out[i].id).await;
        assert_eq!(t.payload, Payload::binary(text.as_bytes().to_vec()));
    }
    assert_eq!(
        get(&fx, existing).await.payload,
        Payload::binary(b"existing".to_vec())
    );
}

/// A batch with one invalid item creates nothing, not even its keys.
pub async fn enqueue_batch_is_atomic(fx: Fixture) {
    let settings = QueueSettings {
        max_payload: 16,
        ..QueueSettings::default()
    };
    let q = make_queue(&fx, "atomic", settings).await;
    let too_big = NewTask::new(Payload::binary(vec![0u8; 17]));
    let refused = [
        (too_big, "payload_too_large"),
        (job("no attempts").max_attempts(0), "bad_request"),
        (job("no lease").lease_ms(0), "bad_request"),
    ];
    for (bad, code) in refused {
        let batch = vec![job("ok").key(key("kept-free")), job("also ok"), bad];
        expect_code(fx.store.enqueue(&q, batch).await, code);
    }
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 0);
    assert!(list_all(&fx, ListRequest::new(q.clone())).await.is_empty());
    let out = fx
        .store
        .enqueue(&q, vec![job("now").key(key("kept-free"))])
        .await
        .unwrap();
    assert!(
        !out[0].duplicate,
        "a refused batch must not record its keys"
    );
}

/// 10,000 tasks in one batch are accepted; 10,001 are refused whole.
pub async fn enqueue_refuses_more_than_10000_tasks(fx: Fixture) {
    let q = make_queue(&fx, "big-batch", QueueSettings::default()).await;
    let over = (0..=MAX_BATCH).map(|_| NewTask::default()).collect();
    expect_code(fx.store.enqueue(&q, over).await, "bad_request");
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 0);

    let created = enqueue_n(&fx, &q, MAX_BATCH).await;
    assert!(created.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(stats_of(&fx, &q).await.counts.ready, MAX_BATCH as u64);
}

/// A task without a kind gets its queue's name.
pub async fn enqueue_defaults_kind_to_queue_name(fx: Fixture) {
    let q = make_queue(&fx, "mail.v2", QueueSettings::default()).await;
    let plain = enqueue(&fx, &q, job("no kind")).await;
    let kinded = enqueue(&fx, &q, job("kind").kind(kind("welcome"))).await;
    assert_eq!(get(&fx, plain).await.kind.as_str(), "mail.v2");
    assert_eq!(get(&fx, kinded).await.kind.as_str(), "welcome");
}

/// What a task gets when the producer says nothing: priority 0, due now,
/// the queue's max_attempts, no own lease, no key, a clean history.
pub async fn enqueue_applies_queue_defaults(fx: Fixture) {
    let settings = QueueSettings {
        max_attempts: 7,
        ..QueueSettings::default()
    };
    let q = make_queue(&fx, "defaults", settings).await;
    let (id, at) = timed(&fx, enqueue(&fx, &q, job("plain"))).await;
    let t = get(&fx, id).await;
    assert_eq!(t.queue, q);
    assert_eq!(t.priority, 0);
    at.assert_now("run_at", t.run_at);
    at.assert_now("created_at", t.created_at);
    at.assert_now("updated_at", t.updated_at);
    assert_eq!(t.state, TaskState::Ready);
    assert_eq!(t.attempt, 0);
    assert_eq!(t.max_attempts, 7, "max_attempts defaults to the queue's");
    assert_eq!(t.lease_ms, None);
    assert_eq!(t.key, None);
    assert_eq!(t.lease, None);
    assert!(t.errors.is_empty());
}

/// Priority, run_at, delay, max_attempts, lease_ms and key are kept as given.
pub async fn enqueue_keeps_given_fields(fx: Fixture) {
    let q = make_queue(&fx, "fields", QueueSettings::default()).await;
    let now = fx.store.now().await.unwrap();
    let later = now.plus(Duration::from_secs(3600));
    let earlier = now.minus(Duration::from_secs(60));

    let task = job("future")
        .priority(i16::MIN)
        .run_at(later)
        .max_attempts(3)
        .lease_ms(1234)
        .key(key("fields-a"));
    let t = get(&fx, enqueue(&fx, &q, task).await).await;
    assert_eq!(t.priority, i16::MIN);
    assert_eq!(t.run_at, later);
    assert_eq!(t.state, TaskState::Scheduled);
    assert_eq!(t.max_attempts, 3);
    assert_eq!(t.lease_ms, Some(1234));
    assert_eq!(t.key, Some(key("fields-a")));

    let past = job("past").priority(i16::MAX).run_at(earlier);
    let t = get(&fx, enqueue(&fx, &q, past).await).await;
    assert_eq!(t.priority, i16::MAX);
    assert_eq!(t.run_at, earlier);
    assert_eq!(t.state, TaskState::Ready);

    let delay = Duration::from_millis(500);
    let (id, at) = timed(&fx, enqueue(&fx, &q, job("delayed").delay(delay))).await;
    let t = get(&fx, id).await;
    at.assert_after("run_at of a delayed task", t.run_at, delay);
    assert_eq!(t.state, TaskState::Scheduled);
}

/// Payload bytes and format come back exactly, empty payloads included,
/// from get and from claim.
pub async fn payload_round_trips_exactly(fx: Fixture) {
    let q = make_queue(&fx, "payloads", QueueSettings::default()).await;
    // JSON in canonical form (compact, keys sorted) so that a remote store
    // that parses and re-serializes values still owes the same bytes.
    let payloads = vec![
        Payload::binary((0..=255u8).collect::<Vec<u8>>()),
        Payload::binary(Vec::new()),
        Payload::json(r#"{"a":[1,2.5,"é",true,null],"n":-9223372036854775808}"#),
        Payload::json("[]"),
        Payload::binary(br#"{"looks":"like json"}"#.to_vec()),
        Payload::binary(vec![0xff; 1000]),
    ];
    let mut created = Vec::new();
    for p in &payloads {
        created.push(enqueue(&fx, &q, NewTask::new(p.clone())).await);
    }
    for (id, p) in created.iter().zip(&payloads) {
        assert_eq!(
            &get(&fx, *id).await.payload,
            p,
            "payload of task {id} via get"
        );
    }
    let claimed = claim(&fx, &q, WORKER, 100).await;
    assert_eq!(ids(&claimed), created);
    for (t, p) in claimed.iter().zip(&payloads) {
        assert_eq!(&t.payload, p, "payload of task {} via claim", t.id);
    }
}

/// A payload larger than the queue's max_payload is refused; one of exactly
/// max_payload is not. The default limit is 1 MiB.
pub async fn enqueue_refuses_payload_over_max_payload(fx: Fixture) {
    let settings = QueueSettings {
        max_payload: 64,
        ..QueueSettings::default()
    };
    let q = make_queue(&fx, "small-payloads", settings).await;
    enqueue(&fx, &q, NewTask::new(Payload::binary(vec![7u8; 64]))).await;
    let over = NewTask::new(Payload::binary(vec![7u8; 65]));
    let err = expect_code(fx.store.enqueue(&q, vec![over]).await, "payload_too_large");
    if let StoreError::PayloadTooLarge { size, max } = err {
        assert_eq!((size, max), (65, 64));
    }
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 1);

    let q = make_queue(&fx, "default-payloads", QueueSettings::default()).await;
    const MIB: usize = 1024 * 1024;
    enqueue(&fx, &q, NewTask::new(Payload::binary(vec![1u8; MIB]))).await;
    let over = NewTask::new(Payload::binary(vec![1u8; MIB + 1]));
    expect_code(fx.store.enqueue(&q, vec![over]).await, "payload_too_large");
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 1);
}

/// docs/spec.md §4: enqueueing to a queue nobody created creates it with defaults.
pub async fn enqueue_creates_queue_on_first_use(fx: Fixture) {
    let q = queue_name("implicit");
    expect_code(fx.store.get_queue(&q).await, "not_found");
    let out = fx.store.enqueue(&q, vec![job("first")]).await.unwrap();
    assert_eq!(
        out.iter().map(|o| o.duplicate).collect::<Vec<_>>(),
        vec![false]
    );
    assert_eq!(
        fx.store.get_queue(&q).await.unwrap(),
        QueueSettings::default()
    );
    assert_eq!(stats_of(&fx, &q).await.counts.ready, 1);
}
