//! The rotation under a long REPEATABLE READ reader of the task table.
//!
//! Such a reader holds a lock on every partition until it ends, so the
//! rotation's ACCESS EXCLUSIVE request cannot be granted; while it waited
//! for its lock timeout, every claim queued behind it. The rotation must
//! not ask while a long transaction holds a lock on the generation, and it
//! must turn again once the reader has gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spool_core::{NewTask, Payload, QueueName, Store};

use crate::rotate::Rotation;
use crate::test_db::{in_fresh_schema, session, url};
use crate::{PgConfig, PgStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reader_never_has_claims_queue_behind_the_rotation() {
    in_fresh_schema("readers", check).await;
}

/// The ring's current generation.
async fn current(db: &tokio_postgres::Client, schema: &str) -> i16 {
    db.query_one(&format!("SELECT current FROM \"{schema}\".ring"), &[])
        .await
        .unwrap()
        .get(0)
}

async fn check(schema: String) {
    // Due at every look: the background rotation tries all the time.
    let config = PgConfig {
        schema: schema.clone(),
        pool_size: 4,
        rotate_interval: Duration::from_millis(10),
        ..PgConfig::default()
    };
    let store = PgStore::connect(&url(), config).await.unwrap();
    let q = QueueName::new("readers").unwrap();
    store
        .enqueue(&q, vec![NewTask::new(Payload::binary(vec![1])); 10])
        .await
        .unwrap();

    let mut reader = session().await;
    let report = reader
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .start()
        .await
        .unwrap();
    report
        .query(&format!("SELECT count(*) FROM \"{schema}\".tasks"), &[])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Meanwhile, any lock request on the task table that has to wait is
    // one that claims would queue behind.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, schema) = (stop.clone(), schema.clone());
        tokio::spawn(async move {
            let db = session().await;
            let mut waits = 0;
            while !stop.load(Ordering::Relaxed) {
                let n: i64 = db
                    .query_one(
                        "SELECT count(*) FROM pg_locks l
                         JOIN pg_class c ON c.oid = l.relation
                         JOIN pg_namespace n ON n.oid = c.relnamespace
                         WHERE n.nspname = $1 AND NOT l.granted",
                        &[&schema],
                    )
                    .await
                    .unwrap()
                    .get(0);
                waits += n;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            waits
        })
    };
    let observer = session().await;
    let before = current(&observer, &schema).await;
    // The background rotation (or its vacuum) may hold the upkeep lock at
    // the moment of a try, which then answers `NotDue`; every try that
    // gets past it must find the report in the way.
    let mut held = 0;
    let trying = Instant::now();
    while held < 5 {
        match store.backend.rotate().await.unwrap() {
            Rotation::NotDue => {
                assert!(
                    trying.elapsed() < Duration::from_secs(10),
                    "the rotation kept answering not due"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            outcome => {
                assert_eq!(outcome, Rotation::Held);
                held += 1;
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    assert_eq!(
        watcher.await.unwrap(),
        0,
        "the rotation asked for a lock it could not have while the report was open"
    );
    assert_eq!(
        current(&observer, &schema).await,
        before,
        "the ring turned under the report"
    );

    // Once the report ends, the ring turns again.
    report.commit().await.unwrap();
    let ended = Instant::now();
    while current(&observer, &schema).await == before {
        assert!(
            ended.elapsed() < Duration::from_secs(5),
            "the ring did not turn after the report ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
