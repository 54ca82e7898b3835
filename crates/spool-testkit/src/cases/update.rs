//! Update (docs/spec.md §3): payload, run_at and priority of a task that is not
//! leased, by id or by key.

use std::time::Duration;

use spool_core::{Ack, Payload, QueueSettings, TaskPatch, TaskRef, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// Update changes what the patch names and nothing else, and claims follow
/// the new priority and run_at.
pub async fn update_changes_payload_run_at_and_priority(fx: Fixture) {
    let q = make_queue(&fx, "update", QueueSettings::default()).await;
    let a = enqueue(&fx, &q, job("a")).await;
    let b = enqueue(&fx, &q, job("b")).await;

    let new_payload = Payload::json(r#"{"v":2}"#);
    let patch = TaskPatch {
        payload: Some(new_payload.clone()),
        priority: Some(-1),
        run_at: None,
    };
    let (updated, at) = timed(&fx, fx.store.update(TaskRef::Id(b), patch)).await;
    let updated = updated.unwrap();
    assert_eq!(updated.payload, new_payload);
    assert_eq!(updated.priority, -1);
    assert_eq!(updated.state, TaskState::Ready);
    at.assert_now("updated_at", updated.updated_at);
    assert_eq!(get(&fx, b).await, updated);
    let t = claim_id(&fx, &q, WORKER, b).await;
    fx.store.ack(b, token(&t), Ack::Done).await.unwrap();

    let later = fx
        .store
        .now()
        .await
        .unwrap()
        .plus(Duration::from_secs(3600));
    let patch = TaskPatch {
        run_at: Some(later),
        ..TaskPatch::default()
    };
    let updated = fx.store.update(TaskRef::Id(a), patch).await.unwrap();
    assert_eq!(updated.state, TaskState::Scheduled);
    assert_eq!(updated.run_at, later);
    assert_eq!(updated.payload.bytes.as_ref(), b"a", "payload untouched");
    assert_eq!(updated.priority, 0, "priority untouched");
    claim_nothing(&fx, &q).await;

    let now = fx.store.now().await.unwrap();
    let patch = TaskPatch {
        run_at: Some(now),
        ..TaskPatch::default()
    };
    let updated = fx.store.update(TaskRef::Id(a), patch).await.unwrap();
    assert_eq!(updated.state, TaskState::Ready);
    claim_id(&fx, &q, WORKER, a).await;
}

/// A leased task cannot be changed: lease_held, and nothing changes.
pub async fn update_of_leased_task_is_lease_held(fx: Fixture) {
    let q = make_queue(&fx, "update-leased", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("busy")).await;
    claim_id(&fx, &q, WORKER, id).await;
    let before = get(&fx, id).await;
    let patch = TaskPatch {
        priority: Some(5),
        ..TaskPatch::default()
    };
    expect_code(fx.store.update(TaskRef::Id(id), patch).await, "lease_held");
    assert_eq!(get(&fx, id).await, before);
}

/// A live task can be updated by its (queue, key).
pub async fn update_by_key(fx: Fixture) {
    let q = make_queue(&fx, "update-key", QueueSettings::default()).await;
    let k = key("client-chosen");
    let id = enqueue(&fx, &q, job("old").key(k.clone())).await;
    let patch = TaskPatch {
        payload: Some(Payload::binary(b"new".to_vec())),
        ..TaskPatch::default()
    };
    let updated = fx
        .store
        .update(TaskRef::Key(q.clone(), k), patch.clone())
        .await
        .unwrap();
    assert_eq!(updated.id, id);
    assert_eq!(get(&fx, id).await.payload.bytes.as_ref(), b"new");
    let missing = TaskRef::Key(q, key("no-such-key"));
    expect_code(fx.store.update(missing, patch).await, "not_found");
}

/// Updating a task that never existed or is gone is not_found.
pub async fn update_of_unknown_task_is_not_found(fx: Fixture) {
    let q = make_queue(&fx, "update-unknown", QueueSettings::default()).await;
    let patch = TaskPatch {
        priority: Some(1),
        ..TaskPatch::default()
    };
    let unknown = fx
        .store
        .update(TaskRef::Id(UNKNOWN_ID), patch.clone())
        .await;
    expect_code(unknown, "not_found");
    let id = enqueue(&fx, &q, job("done")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    fx.store.ack(id, token(&t), Ack::Done).await.unwrap();
    expect_code(fx.store.update(TaskRef::Id(id), patch).await, "not_found");
}

/// The queue's max_payload holds for updates as for enqueues.
pub async fn update_refuses_payload_over_max_payload(fx: Fixture) {
    let settings = QueueSettings {
        max_payload: 16,
        ..QueueSettings::default()
    };
    let q = make_queue(&fx, "update-limit", settings).await;
    let id = enqueue(&fx, &q, job("small")).await;
    let before = get(&fx, id).await;
    let patch = TaskPatch {
        payload: Some(Payload::binary(vec![0u8; 17])),
        ..TaskPatch::default()
    };
    expect_code(
        fx.store.update(TaskRef::Id(id), patch).await,
        "payload_too_large",
    );
    assert_eq!(get(&fx, id).await, before);
}
