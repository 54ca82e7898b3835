//! The same runtime against a real server through `RemoteStore`: claims
//! long-poll over HTTP, acks go in batches, failures are recorded.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use spool_runtime::{Client, Context, Job, QueueConfig, TaskError, Worker};

use crate::support::{eventually, fast_queue, remaining, remote, Server};

#[derive(Serialize, Deserialize)]
struct Hop {
    fail_first: bool,
}

impl Job for Hop {
    const KIND: &'static str = "hop";
}

#[tokio::test]
async fn the_runtime_works_over_http() {
    let server = Server::builder().start().await;
    let store = remote(&server);
    fast_queue(store.as_ref(), "hop", 5).await;
    let ran = Arc::new(AtomicU32::new(0));
    let count = ran.clone();
    let worker = Worker::builder(store.clone())
        .queue("hop", QueueConfig::new().concurrency(8))
        .register(move |ctx: Context, hop: Hop| {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                if hop.fail_first && ctx.attempt() == 1 {
                    return Err(TaskError::retry("first try fails"));
                }
                Ok(())
            }
        })
        .start()
        .unwrap();
    let client = Client::new(store.clone());
    client
        .enqueue_many((0..100).map(|i| Hop {
            fail_first: i % 10 == 0,
        }))
        .await
        .unwrap();
    eventually(Duration::from_secs(10), "all done", || async {
        remaining(store.as_ref(), "hop").await == 0
    })
    .await;
    assert_eq!(ran.load(Ordering::SeqCst), 110);
    // Idle now: a new task is picked up by the waiting long poll.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = Instant::now();
    client.enqueue(Hop { fail_first: false }).await.unwrap();
    eventually(Duration::from_secs(2), "picked up", || async {
        ran.load(Ordering::SeqCst) == 111
    })
    .await;
    assert!(
        sent.elapsed() < Duration::from_millis(500),
        "{:?}",
        sent.elapsed()
    );
    assert!(worker.shutdown(Duration::from_secs(2)).await.finished);
}

#[derive(Serialize, Deserialize)]
struct Ping;

impl Job for Ping {
    const KIND: &'static str = "ping";
}

/// A unit job's payload is JSON `null`: it must come back over HTTP as a
/// payload, not as a missing field (regression).
#[tokio::test]
async fn null_payloads_survive_the_round_trip() {
    let server = Server::builder().start().await;
    let store = remote(&server);
    let ran = Arc::new(AtomicU32::new(0));
    let count = ran.clone();
    let worker = Worker::builder(store.clone())
        .register(move |_ctx: Context, _ping: Ping| {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .start()
        .unwrap();
    Client::new(store.clone()).enqueue(Ping).await.unwrap();
    eventually(Duration::from_secs(5), "it ran", || async {
        ran.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);
}
