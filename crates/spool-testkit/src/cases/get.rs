//! Get (docs/spec.md §3): a task by id or by (queue, key).

use spool_core::{QueueSettings, TaskRef};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// By id and by key, get answers the same task.
pub async fn get_by_id_and_by_key(fx: Fixture) {
    let q = make_queue(&fx, "get", QueueSettings::default()).await;
    let k = key("order-7");
    let id = enqueue(&fx, &q, job("payload").key(k.clone())).await;
    let by_id = get(&fx, id).await;
    let by_key = fx
        .store
        .get(TaskRef::Key(q.clone(), k.clone()))
        .await
        .unwrap();
    assert_eq!(by_id, by_key);
    assert_eq!(by_id.id, id);
    assert_eq!(by_id.queue, q);
    assert_eq!(by_id.key, Some(k));
}

/// Unknown ids, unknown keys and keys of another queue are not_found.
pub async fn get_unknown_is_not_found(fx: Fixture) {
    let q = make_queue(&fx, "get-here", QueueSettings::default()).await;
    let elsewhere = make_queue(&fx, "get-elsewhere", QueueSettings::default()).await;
    let k = key("only-elsewhere");
    enqueue(&fx, &elsewhere, job("there").key(k.clone())).await;
    expect_code(fx.store.get(TaskRef::Id(UNKNOWN_ID)).await, "not_found");
    expect_code(fx.store.get(TaskRef::Key(q, k.clone())).await, "not_found");
    let nowhere = TaskRef::Key(queue_name("no-such-queue"), k);
    expect_code(fx.store.get(nowhere).await, "not_found");
}
