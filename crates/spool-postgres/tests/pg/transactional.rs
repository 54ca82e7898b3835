//! Transactional enqueue: `PgStore::enqueue_in` joins the caller's
//! transaction, so the tasks exist exactly when the caller's own writes do.

use std::time::{Duration, Instant};

use crate::common::{connect, database_url, fresh_schema, test_config, DropSchema};
use spool_core::{
    ClaimRequest, NewTask, Payload, QueueName, QueueSettings, Store, TaskKey, TaskRef,
};
use spool_postgres::{PgConfig, PgStore};
use tokio_postgres::{Client, NoTls};

/// A store in a fresh schema, an application connection of its own, and a
/// table of the application's in the same schema.
async fn setup() -> (PgStore, Client, QueueName, DropSchema) {
    setup_with(test_config).await
}

/// [`setup`] with the store's configuration made by `config` for the schema.
async fn setup_with(
    config: impl FnOnce(&str) -> PgConfig,
) -> (PgStore, Client, QueueName, DropSchema) {
    let schema = fresh_schema();
    let store = connect(config(&schema)).await;
    let (app, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .expect("an application connection");
    tokio::spawn(connection);
    app.batch_execute(&format!(
        "CREATE TABLE \"{schema}\".orders (id bigint PRIMARY KEY)"
    ))
    .await
    .unwrap();
    let q = QueueName::new("mail").unwrap();
    store
        .put_queue(&q, QueueSettings::default().into())
        .await
        .unwrap();
    (store, app, q, DropSchema(schema))
}

fn receipt(order: i64) -> NewTask {
    NewTask::new(Payload::json(format!(r#"{{"order":{order}}}"#)))
        .key(TaskKey::new(format!("receipt-{order}")).unwrap())
}

async fn orders(app: &Client, store: &PgStore) -> i64 {
    let sql = format!("SELECT count(*) FROM \"{}\".orders", store.schema());
    app.query_one(&sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_makes_the_tasks_claimable_with_the_callers_writes() {
    let (store, mut app, q, _drop) = setup().await;
    let tx = app.transaction().await.unwrap();
    let insert = format!("INSERT INTO \"{}\".orders VALUES (1)", store.schema());
    tx.execute(&insert, &[]).await.unwrap();
    let out = store.enqueue_in(&tx, &q, vec![receipt(1)]).await.unwrap();
    assert!(!out[0].duplicate);

    // Not there for anyone else until the commit.
    let claim = ClaimRequest::new(q.clone(), "w").max(10);
    assert!(store.claim(claim.clone()).await.unwrap().is_empty());
    let unseen = store.get(TaskRef::Id(out[0].id)).await;
    assert_eq!(unseen.unwrap_err().code(), "not_found");

    tx.commit().await.unwrap();
    assert_eq!(orders(&app, &store).await, 1);
    let got = store.claim(claim).await.unwrap();
    assert_eq!(
        got.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![out[0].id]
    );
    assert_eq!(got[0].payload, Payload::json(r#"{"order":1}"#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_leaves_no_task_and_no_key() {
    let (store, mut app, q, _drop) = setup().await;
    let tx = app.transaction().await.unwrap();
    let insert = format!("INSERT INTO \"{}\".orders VALUES (2)", store.schema());
    tx.execute(&insert, &[]).await.unwrap();
    let out = store.enqueue_in(&tx, &q, vec![receipt(2)]).await.unwrap();
    tx.rollback().await.unwrap();

    assert_eq!(orders(&app, &store).await, 0);
    let gone = store.get(TaskRef::Id(out[0].id)).await;
    assert_eq!(gone.unwrap_err().code(), "not_found");
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.iter().map(|s| s.counts.total()).sum::<u64>(), 0);
    assert!(store
        .claim(ClaimRequest::new(q.clone(), "w").max(10))
        .await
        .unwrap()
        .is_empty());
    // The key was never taken: enqueueing it again creates a task.
    let again = store.enqueue(&q, vec![receipt(2)]).await.unwrap();
    assert!(!again[0].duplicate);
    assert_ne!(again[0].id, out[0].id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_wakes_a_waiting_claimer() {
    let (store, mut app, q, _drop) = setup().await;
    let waiting = {
        let (store, q) = (store.clone(), q.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let req = ClaimRequest::new(q, "w").wait(Duration::from_secs(10));
            (store.claim(req).await.unwrap(), started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let tx = app.transaction().await.unwrap();
    let out = store.enqueue_in(&tx, &q, vec![receipt(3)]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "woken before the commit");
    tx.commit().await.unwrap();

    let (got, waited) = waiting.await.unwrap();
    assert_eq!(
        got.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![out[0].id]
    );
    // Woken by the notification, well before the 1 s fallback poll.
    assert!(waited < Duration::from_millis(900), "waited {waited:?}");
}

/// The ring's current generation.
async fn current(app: &Client, store: &PgStore) -> i16 {
    let sql = format!("SELECT current FROM \"{}\".ring", store.schema());
    app.query_one(&sql, &[]).await.unwrap().get(0)
}

/// A caller's transaction that stays open while the ring turns: the
/// rotation must not empty the generation its task went to before the
/// commit (its rows would not be there to move), and after the commit the
/// task is moved, not lost (src/rotate.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_enqueued_in_a_transaction_open_across_ring_turns_is_kept() {
    let (store, mut app, q, _drop) = setup_with(|schema| PgConfig {
        rotate_interval: Duration::from_millis(100),
        ..test_config(schema)
    })
    .await;
    let (reader, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .expect("a second application connection");
    tokio::spawn(connection);
    let insert = format!("INSERT INTO \"{}\".orders VALUES (4)", store.schema());
    // The generation the task went to is the one current both before and
    // after the insert; the ring may turn in between, and a read of the
    // task inside the transaction would lock every generation (the ring
    // would wait on that, not on the insert).
    let (tx, out, written_to) = loop {
        let tx = app.transaction().await.unwrap();
        tx.execute(&insert, &[]).await.unwrap();
        let before = current(&reader, &store).await;
        let out = store.enqueue_in(&tx, &q, vec![receipt(4)]).await.unwrap();
        if current(&reader, &store).await == before {
            break (tx, out, before);
        }
        tx.rollback().await.unwrap();
    };

    // The ring turns twice, then waits: the third turn would empty the
    // generation the open transaction wrote to.
    let waits_at = (written_to + 2) % 3;
    let started = Instant::now();
    while current(&reader, &store).await != waits_at {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the ring did not turn twice in 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        current(&reader, &store).await,
        waits_at,
        "the ring emptied a generation a transaction still writes to"
    );

    tx.commit().await.unwrap();
    let started = Instant::now();
    while current(&reader, &store).await == waits_at {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the ring did not turn within 10 s of the commit"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let claim = ClaimRequest::new(q.clone(), "w").max(10);
    let got = store.claim(claim.clone()).await.unwrap();
    assert_eq!(
        got.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![out[0].id]
    );
    assert_eq!(got[0].payload, Payload::json(r#"{"order":4}"#));
    assert!(store.claim(claim).await.unwrap().is_empty());
    // Its key still names it.
    let again = store.enqueue(&q, vec![receipt(4)]).await.unwrap();
    assert!(again[0].duplicate);
    assert_eq!(again[0].id, out[0].id);
}
