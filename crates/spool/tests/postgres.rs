//! The library on PostgreSQL, through the facade (feature `postgres`):
//! typed jobs enqueued with a [`Client`] run once each in a [`Worker`]
//! pool, a failure is retried, and the queue ends empty.
//!
//! Needs PostgreSQL at `DATABASE_URL` (default: the local server) and
//! fails, never skips, when it cannot be reached; the run uses a schema of
//! its own and drops it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use spool::postgres::PgConfig;
use spool::{Client, Context, Job, QueueConfig, Store, TaskError, Worker};

#[derive(Serialize, Deserialize)]
struct Render {
    page: u32,
}

impl Job for Render {
    const KIND: &'static str = "render";
    const QUEUE: &'static str = "pages";
}

const PAGES: u32 = 200;

fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_once_each_on_postgres_and_failures_are_retried() {
    let url = database_url();
    let schema = format!("spool_facade_{:016x}", rand::random::<u64>());
    let config = PgConfig {
        schema: schema.clone(),
        pool_size: 8,
        ..PgConfig::default()
    };
    let store = match spool::postgres::connect_with(&url, config).await {
        Ok(store) => store,
        Err(e) => panic!(
            "cannot use PostgreSQL at {url}: {e}\n\
             Start it, or point DATABASE_URL at a database where this user may create schemas."
        ),
    };
    let client = Client::new(store.clone());
    for page in 0..PAGES {
        client.enqueue(Render { page }).await.unwrap();
    }

    // Every page's attempts; page 7 fails its first attempt.
    let runs: Arc<Mutex<HashMap<u32, Vec<u32>>>> = Arc::default();
    let seen = runs.clone();
    let handler = move |ctx: Context, job: Render| {
        let seen = seen.clone();
        async move {
            seen.lock()
                .unwrap()
                .entry(job.page)
                .or_default()
                .push(ctx.attempt());
            if job.page == 7 && ctx.attempt() == 1 {
                return Err(TaskError::retry_after("not yet", Duration::from_millis(50)));
            }
            Ok(())
        }
    };
    let worker = Worker::builder(store.clone())
        .queue(Render::QUEUE, QueueConfig::new().concurrency(8))
        .register(handler)
        .start()
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stats = store.stats().await.unwrap();
        let left: u64 = stats.iter().map(|q| q.counts.total()).sum();
        if left == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{left} tasks left after 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.shutdown(Duration::from_secs(5)).await;

    {
        let runs = runs.lock().unwrap();
        assert_eq!(runs.len(), PAGES as usize, "every page ran");
        for (page, attempts) in runs.iter() {
            let expected = if *page == 7 { vec![1, 2] } else { vec![1] };
            assert_eq!(attempts, &expected, "page {page}");
        }
    }

    drop(client);
    drop(store);
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();
}
