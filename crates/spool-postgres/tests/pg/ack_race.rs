//! An ack that races a change of its own task's row.
//!
//! The ack statement finds each row by id, then deletes it by ctid
//! (README.md, "Plans that do not trust statistics"); a change committed
//! in between, such as the holder's own heartbeat, gives the row a new
//! ctid, and the delete passes over it. The store looks again at what the
//! statement refused, so a holder whose lease is still good is never told
//! `lease_lost`.

use std::time::{Duration, Instant};

use crate::common::{connect, database_url, fresh_schema, test_config, DropSchema};
use spool_core::{ClaimRequest, NewTask, Payload, QueueName, Store, StoreError, TaskRef};
use tokio_postgres::NoTls;

/// Waits until some session waits for a lock that session `holder` holds.
async fn someone_waits_for(admin: &tokio_postgres::Client, holder: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE $1 = ANY(pg_blocking_pids(pid))",
                &[&holder],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the ack never waited for the row"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_racing_a_heartbeat_of_its_lease_succeeds() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let store = connect(test_config(&schema)).await;
    let q = QueueName::new("race").unwrap();
    store
        .enqueue(&q, vec![NewTask::new(Payload::binary(vec![1]))])
        .await
        .unwrap();
    let task = store
        .claim(ClaimRequest::new(q.clone(), "w").lease(Duration::from_secs(60)))
        .await
        .unwrap()
        .pop()
        .expect("a task");
    let token = task.lease.as_ref().expect("a lease").token;

    // Another session changes the row, as a heartbeat would, and holds the
    // change uncommitted while the ack starts: the ack's snapshot predates
    // it, and its delete waits for the row lock.
    let (mut admin, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let (observer, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let heartbeat = admin.transaction().await.unwrap();
    let holder: i32 = heartbeat
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    heartbeat
        .execute(
            &format!(
                "UPDATE \"{schema}\".tasks \
                 SET lease_expires_at = lease_expires_at + interval '1 second' WHERE id = $1"
            ),
            &[&i64::try_from(task.id.0).unwrap()],
        )
        .await
        .unwrap();
    let acking = {
        let store = store.clone();
        tokio::spawn(async move { store.ack_many(vec![(task.id, token)]).await })
    };
    someone_waits_for(&observer, holder).await;
    heartbeat.commit().await.unwrap();

    let results = acking.await.unwrap().unwrap();
    assert_eq!(results, vec![Ok(())], "the lease was still the holder's");
    assert_eq!(
        store.get(TaskRef::Id(task.id)).await,
        Err(StoreError::NotFound),
        "the task is done"
    );
}
