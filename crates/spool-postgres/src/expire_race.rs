//! Lease expiry racing a heartbeat of the same lease.
//!
//! The sweeper reads expired leases without locks, then writes them down
//! in a second statement. A heartbeat that began before the lease ran out
//! can commit in between, with the same token and a later end; it answers
//! the holder that its lease is extended. The write must then leave the
//! task alone, or a second worker claims it while the first still works.
//! This test puts the heartbeat's commit exactly between the sweeper's
//! read and its write: another session holds the task's row lock while
//! the heartbeat starts, and lets go once the sweeper has read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use spool_core::{ClaimRequest, NewTask, Payload, QueueName, Store, TaskRef, TaskState};

use crate::test_db::{in_fresh_schema, session, url};
use crate::{PgConfig, PgStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_never_overwrites_a_heartbeat_that_committed_after_the_read() {
    in_fresh_schema("expire", check).await;
}

async fn check(schema: String) {
    // The background sweeper ticks once at start, then not again: this
    // test runs the sweeper's two statements itself.
    let config = PgConfig {
        schema: schema.clone(),
        pool_size: 4,
        sweep_interval: Duration::from_secs(3600),
        ..PgConfig::default()
    };
    let store = PgStore::connect(&url(), config).await.unwrap();
    let q = QueueName::new("race").unwrap();
    store
        .enqueue(&q, vec![NewTask::new(Payload::binary(vec![1]))])
        .await
        .unwrap();
    let lease = Duration::from_millis(500);
    let task = store
        .claim(ClaimRequest::new(q.clone(), "w").lease(lease))
        .await
        .unwrap()
        .pop()
        .expect("a task");
    let claimed_at = Instant::now();
    let token = task.lease.as_ref().expect("a lease").token;

    // Another session holds the row lock, so the heartbeat starts (its
    // clock reads before the lease ends) and then waits.
    let mut locker = session().await;
    let observer = session().await;
    let lock = locker.transaction().await.unwrap();
    let holder: i32 = lock
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    lock.execute(
        &format!("SELECT 1 FROM \"{schema}\".tasks WHERE id = $1 FOR UPDATE"),
        &[&i64::try_from(task.id.0).unwrap()],
    )
    .await
    .unwrap();
    let heartbeat = {
        let store = store.clone();
        tokio::spawn(async move { store.extend(task.id, token, Duration::from_secs(60)).await })
    };
    loop {
        let waiting: i64 = observer
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
                &[&holder],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(
            claimed_at.elapsed() < lease,
            "the heartbeat did not start before the lease ran out"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // The lease runs out; the sweeper reads it as expired.
    tokio::time::sleep((lease + Duration::from_millis(100)).saturating_sub(claimed_at.elapsed()))
        .await;
    let backend = &store.backend;
    let expired = backend
        .read_expired(None, crate::sweep::ALL_LEASES)
        .await
        .unwrap();
    assert_eq!(expired.len(), 1, "the sweeper saw the lease expired");

    // The heartbeat commits, then the sweeper writes.
    lock.commit().await.unwrap();
    let extended = heartbeat
        .await
        .unwrap()
        .expect("the heartbeat was answered");
    assert_eq!(extended.state, TaskState::Leased);
    let written = backend.write_expired(&expired).await.unwrap();

    assert_eq!(
        written, 0,
        "the expiry overwrote a lease extended meanwhile"
    );
    let now = store.get(TaskRef::Id(task.id)).await.unwrap();
    assert_eq!(now.state, TaskState::Leased, "the holder keeps its task");
    let second = store.claim(ClaimRequest::new(q, "other")).await.unwrap();
    assert!(second.is_empty(), "a second worker got the task");
}
