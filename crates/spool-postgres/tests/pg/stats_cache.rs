//! Stats count the task table at most once per `stats_max_age` for every
//! node: the admin page, `/metrics` scrapes and each node's monitor ask
//! every few seconds, and at millions of tasks a count is a scan of them
//! all. Within that age every node answers the kept count.

use std::time::{Duration, Instant};

use crate::common::{connect, fresh_schema, test_config, DropSchema};
use spool_core::{NewTask, Payload, QueueName, Store};
use spool_postgres::PgStore;

async fn ready(store: &PgStore, q: &QueueName) -> u64 {
    let stats = store.stats().await.unwrap();
    stats
        .iter()
        .find(|s| &s.name == q)
        .map_or(0, |s| s.counts.ready)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_share_one_count_per_interval() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let max_age = Duration::from_secs(2);
    let node = || {
        connect(spool_postgres::PgConfig {
            stats_max_age: max_age,
            ..test_config(&schema)
        })
    };
    let (a, b) = (node().await, node().await);
    let q = QueueName::new("counted").unwrap();
    let task = || vec![NewTask::new(Payload::binary(vec![1]))];
    a.enqueue(&q, task()).await.unwrap();

    let counted_at = Instant::now();
    assert_eq!(ready(&a, &q).await, 1, "the first count");
    b.enqueue(&q, task()).await.unwrap();
    let (seen_by_a, seen_by_b) = (ready(&a, &q).await, ready(&b, &q).await);
    assert!(
        counted_at.elapsed() < max_age,
        "the machine was too slow to tell"
    );
    assert_eq!(
        (seen_by_a, seen_by_b),
        (1, 1),
        "both nodes answered the kept count, without counting again"
    );

    // The count was kept a little after counted_at.
    let aged = max_age + Duration::from_millis(300);
    tokio::time::sleep(aged.saturating_sub(counted_at.elapsed())).await;
    assert_eq!(
        ready(&b, &q).await,
        2,
        "a count older than the age is redone"
    );
}
