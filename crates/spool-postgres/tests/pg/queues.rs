//! Queue creation on enqueue, which the conformance suite leaves to each
//! store: strict queues, and refused batches that must not create one.

use crate::common::{connect, fresh_schema, test_config, DropSchema};
use spool_core::{NewTask, Payload, QueueName, Store};
use spool_postgres::PgConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_batch_does_not_create_its_queue() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let store = connect(test_config(&schema)).await;
    let q = QueueName::new("never").unwrap();
    let too_big = NewTask::new(Payload::binary(vec![0u8; 1024 * 1024 + 1]));
    let err = store.enqueue(&q, vec![too_big]).await.unwrap_err();
    assert_eq!(err.code(), "payload_too_large");
    assert_eq!(store.get_queue(&q).await.unwrap_err().code(), "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_queues_refuse_enqueues_to_unknown_queues() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let store = connect(PgConfig {
        strict_queues: true,
        ..test_config(&schema)
    })
    .await;
    let q = QueueName::new("unmade").unwrap();
    let task = NewTask::new(Payload::binary(b"x".to_vec()));
    let err = store.enqueue(&q, vec![task.clone()]).await.unwrap_err();
    assert_eq!(err.code(), "not_found");
    store.put_queue(&q, Default::default()).await.unwrap();
    let out = store.enqueue(&q, vec![task]).await.unwrap();
    assert!(!out[0].duplicate);
}
