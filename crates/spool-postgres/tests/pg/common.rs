//! What the PostgreSQL tests share: where the database is, a fresh schema
//! per test, and dropping it afterwards.
//!
//! Tests read `DATABASE_URL` (default: the local development server) and
//! fail, never skip, when it cannot be reached.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spool_core::{Ack, ClaimRequest, QueueName, Store, Task, TaskId};
use spool_postgres::{ClaimStrategy, PgConfig, PgStore};
use spool_testkit::{Fixture, TimeControl};

/// The local development server's test database, used when `DATABASE_URL`
/// is not set.
pub(crate) const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The database the tests use: `DATABASE_URL`, else [`DEFAULT_URL`].
pub(crate) fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_string())
}

/// A connection of its own to the test database, outside any store: to
/// write what an older build left, or look at tables directly.
pub(crate) async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&database_url(), tokio_postgres::NoTls)
        .await
        .expect("a connection to the test database");
    tokio::spawn(connection);
    client
}

/// Rows left in `schema`'s dependency side tables: (results, edges).
pub(crate) async fn side_rows(schema: &str) -> (i64, i64) {
    let row = admin()
        .await
        .query_one(
            &format!(
                "SELECT (SELECT count(*) FROM \"{schema}\".task_results), \
                        (SELECT count(*) FROM \"{schema}\".task_deps)"
            ),
            &[],
        )
        .await
        .expect("the side tables");
    (row.get(0), row.get(1))
}

/// A schema name no other test uses.
pub(crate) fn fresh_schema() -> String {
    format!("spool_test_{:016x}", rand::random::<u64>())
}

/// Settings for a test store in `schema`: a small pool, since tests run in
/// parallel against one server.
pub(crate) fn test_config(schema: &str) -> PgConfig {
    PgConfig {
        schema: schema.to_string(),
        pool_size: 12,
        ..PgConfig::default()
    }
}

/// Connects, or fails the test with a message that says what to do.
pub(crate) async fn connect(config: PgConfig) -> PgStore {
    let url = database_url();
    match PgStore::connect(&url, config).await {
        Ok(store) => store,
        Err(e) => panic!(
            "cannot use PostgreSQL at {url}: {e}\n\
             Start it, or point DATABASE_URL at a database where this user may create schemas."
        ),
    }
}

/// Drops its schema when dropped (after the store, see `Fixture::keep`).
pub(crate) struct DropSchema(pub(crate) String);

impl Drop for DropSchema {
    fn drop(&mut self) {
        let schema = self.0.clone();
        // Drop runs inside the test's runtime, which cannot block on another
        // future: a thread of its own does the work.
        let done = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async {
                let (client, connection) =
                    tokio_postgres::connect(&database_url(), tokio_postgres::NoTls).await?;
                tokio::spawn(connection);
                client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                    .await
            })
        })
        .join();
        if let Ok(Err(e)) = done {
            eprintln!("could not drop schema {}: {e}", self.0);
        }
    }
}

/// A fresh store in a schema of its own, dropped after the case.
pub(crate) async fn fresh() -> Fixture {
    fresh_with(ClaimStrategy::SkipLocked).await
}

/// [`fresh`], claiming under the global acquire lock.
pub(crate) async fn fresh_global_lock() -> Fixture {
    fresh_with(ClaimStrategy::GlobalLock).await
}

async fn fresh_with(claim: ClaimStrategy) -> Fixture {
    let schema = fresh_schema();
    let store = connect(PgConfig {
        claim,
        ..test_config(&schema)
    })
    .await;
    Fixture::new(Arc::new(store), TimeControl::Real).keep(DropSchema(schema))
}

/// `n` stores on one schema: nodes of one cluster.
pub(crate) async fn stores_on(schema: &str, n: usize) -> Vec<Arc<PgStore>> {
    let mut stores = Vec::new();
    for _ in 0..n {
        stores.push(Arc::new(connect(test_config(schema)).await));
    }
    stores
}

/// How [`drain_across`] claims: claimers on each store, tasks per claim
/// (long polls of 300 ms), and how long a claimer holds what it got
/// before it acks.
pub(crate) struct Claimers {
    pub(crate) per_node: usize,
    pub(crate) max: u32,
    pub(crate) hold: Duration,
}

/// Claimers on every store drain `tasks` tasks of `q`, as `how` says, and
/// ack each task they got. `claimed` hears of each batch once its claim
/// answered, `released` of each task before its ack, so what they count
/// never exceeds what the store has leased. Answers the ids acked; fails
/// the test unless all are acked within 60 s.
pub(crate) async fn drain_across(
    stores: &[Arc<PgStore>],
    q: &QueueName,
    how: Claimers,
    tasks: usize,
    claimed: impl Fn(&[Task]) + Send + Sync + 'static,
    released: impl Fn(&Task) + Send + Sync + 'static,
) -> Vec<TaskId> {
    let (claimed, released) = (Arc::new(claimed), Arc::new(released));
    let done = Arc::new(AtomicUsize::new(0));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut claimers = Vec::new();
    for (n, store) in stores.iter().enumerate() {
        for c in 0..how.per_node {
            let (store, done, acked) = (store.clone(), done.clone(), acked.clone());
            let (claimed, released) = (claimed.clone(), released.clone());
            let req = ClaimRequest::new(q.clone(), format!("node{n}-{c}"))
                .max(how.max)
                .wait(Duration::from_millis(300));
            let hold = how.hold;
            claimers.push(tokio::spawn(async move {
                while done.load(Ordering::SeqCst) < tasks {
                    let got = store.claim(req.clone()).await.expect("a claim");
                    claimed(&got);
                    tokio::time::sleep(hold).await;
                    for t in got {
                        released(&t);
                        let token = t.lease.as_ref().expect("a lease").token;
                        store.ack(t.id, token, Ack::Done).await.expect("an ack");
                        acked.lock().unwrap_or_else(|e| e.into_inner()).push(t.id);
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }));
        }
    }
    for c in claimers {
        tokio::time::timeout(Duration::from_secs(60), c)
            .await
            .expect("the claimers drain the queue")
            .expect("a claimer");
    }
    let acked = acked.lock().unwrap_or_else(|e| e.into_inner()).clone();
    acked
}

/// `per_node` claimers on each of `stores` claim up to 10 at a time from
/// `q` (long polls of 100 ms) for `run`, never acking, each claim's tasks
/// handed to `took`. Answers how long they ran.
pub(crate) async fn claim_for(
    stores: &[Arc<PgStore>],
    q: &QueueName,
    per_node: usize,
    run: Duration,
    took: impl Fn(&[Task]) + Send + Sync + 'static,
) -> Duration {
    let took = Arc::new(took);
    let started = Instant::now();
    let mut claimers = Vec::new();
    for (n, store) in stores.iter().enumerate() {
        for c in 0..per_node {
            let (store, q, took) = (store.clone(), q.clone(), took.clone());
            claimers.push(tokio::spawn(async move {
                let req = ClaimRequest::new(q, format!("node{n}-{c}"))
                    .max(10)
                    .wait(Duration::from_millis(100));
                while started.elapsed() < run {
                    took(&store.claim(req.clone()).await.unwrap());
                }
            }));
        }
    }
    for c in claimers {
        c.await.unwrap();
    }
    started.elapsed()
}
