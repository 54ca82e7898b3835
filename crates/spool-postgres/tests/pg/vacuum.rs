//! The store vacuums its task table after every so many claims, and only
//! one process at a time does (src/vacuum.rs).

use std::time::{Duration, Instant};

use crate::common::{connect, database_url, fresh_schema, test_config, DropSchema};
use spool_core::{ClaimRequest, NewTask, Payload, QueueName, QueueSettings, Store};
use spool_postgres::PgStore;
use tokio_postgres::{Client, NoTls};

const THRESHOLD: u64 = 100;

async fn session() -> Client {
    let (client, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// How many times the schema's task table (any partition) was vacuumed,
/// by anyone.
async fn vacuums(client: &Client, schema: &str) -> i64 {
    client
        .query_one(
            "SELECT coalesce(sum(vacuum_count), 0)::bigint FROM pg_stat_user_tables \
             WHERE schemaname = $1 AND relname LIKE 'tasks\\_%'",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0)
}

/// Enqueues `n` tasks, then claims and acks them all. Payloads of 1 kB,
/// so that the partition they go to passes the ten pages below which the
/// store does not vacuum one (`sql/vacuum_targets.sql`).
async fn churn(store: &PgStore, q: &QueueName, n: usize) {
    let tasks = (0..n)
        .map(|_| NewTask::new(Payload::binary(vec![1; 1000])))
        .collect();
    store.enqueue(q, tasks).await.unwrap();
    loop {
        let got = store
            .claim(ClaimRequest::new(q.clone(), "w").max(50))
            .await
            .unwrap();
        if got.is_empty() {
            return;
        }
        let acks = got
            .iter()
            .map(|t| (t.id, t.lease.as_ref().unwrap().token))
            .collect();
        store.ack_many(acks).await.unwrap();
    }
}

/// Waits up to `within` for the table's vacuum count to pass `count`.
async fn vacuumed_past(client: &Client, schema: &str, count: i64, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if vacuums(client, schema).await > count {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_past_the_threshold_vacuum_the_task_table_one_process_at_a_time() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let mut config = test_config(&schema);
    config.vacuum_after_claims = THRESHOLD;
    // The ring must not turn meanwhile: a rotation truncates the partition
    // the churn left its dead rows in, and the vacuum then finds nothing
    // worth visiting (a slow machine makes the test outlast an interval).
    config.rotate_interval = Duration::from_secs(3600);
    config.rotate_size = u64::MAX;
    let store = connect(config).await;
    let q = QueueName::new("churn").unwrap();
    store
        .put_queue(&q, QueueSettings::default().into())
        .await
        .unwrap();
    let stats = session().await;

    // Below the threshold, nothing.
    churn(&store, &q, THRESHOLD as usize / 2).await;
    assert!(!vacuumed_past(&stats, &schema, 0, Duration::from_secs(1)).await);

    // Another process holds the vacuum lock: this one waits for it.
    let other = session().await;
    let key = format!("spool.vacuum \"{schema}\"");
    other
        .execute("SELECT pg_advisory_lock(hashtext($1))", &[&key])
        .await
        .unwrap();
    churn(&store, &q, THRESHOLD as usize).await;
    assert!(
        !vacuumed_past(&stats, &schema, 0, Duration::from_secs(2)).await,
        "vacuumed while another process held the lock"
    );

    // Once it is free, the vacuum that was due runs, with no more claims:
    // a lock found taken (here by another process, as often by the
    // rotation's look at whether a turn is due) puts the vacuum off to the
    // next look, not to the next threshold's worth of claims.
    other
        .execute("SELECT pg_advisory_unlock(hashtext($1))", &[&key])
        .await
        .unwrap();
    assert!(
        vacuumed_past(&stats, &schema, 0, Duration::from_secs(10)).await,
        "no vacuum after the lock was given back"
    );
}
