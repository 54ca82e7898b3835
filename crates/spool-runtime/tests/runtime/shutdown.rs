//! Graceful shutdown: runs that finish within the timeout are acked; the
//! rest are cut off and released without burning their attempt; nothing is
//! claimed after the shutdown began.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use spool_core::TaskState;
use spool_runtime::{Client, Context, Job, QueueConfig, Worker};

use crate::support::{eventually, tasks};

#[derive(Serialize, Deserialize)]
struct Nap {
    ms: u64,
}

impl Job for Nap {
    const KIND: &'static str = "nap";
}

#[tokio::test]
async fn shutdown_finishes_quick_runs_and_releases_the_rest() {
    let e = crate::support::Embedded::open();
    let client = Client::new(e.store.clone());
    let worker = Worker::builder(e.store.clone())
        .queue("nap", QueueConfig::new().concurrency(4))
        .register(|_ctx: Context, nap: Nap| async move {
            tokio::time::sleep(Duration::from_millis(nap.ms)).await;
            Ok(())
        })
        .start()
        .unwrap();
    client
        .enqueue_many([100, 100, 60_000, 60_000].map(|ms| Nap { ms }))
        .await
        .unwrap();
    eventually(Duration::from_secs(5), "all four run", || async {
        tasks(e.store.as_ref(), "nap")
            .await
            .iter()
            .filter(|t| t.state == TaskState::Leased)
            .count()
            == 4
    })
    .await;
    // Enqueued after the start of the shutdown: must not be claimed.
    let report = {
        let shutdown = worker.shutdown(Duration::from_millis(500));
        let late = client.enqueue(Nap { ms: 1 });
        let (report, late) = tokio::join!(shutdown, late);
        late.unwrap();
        report
    };
    assert!(!report.finished);
    assert_eq!(report.released, 2);
    let left = tasks(e.store.as_ref(), "nap").await;
    assert_eq!(left.len(), 3, "the two quick ones completed");
    for t in &left {
        assert_eq!(t.state, TaskState::Ready);
        assert_eq!(t.attempt, 0, "a release does not burn the attempt");
    }
}

#[tokio::test]
async fn a_shutdown_with_time_enough_releases_nothing() {
    let e = crate::support::Embedded::open();
    let worker = Worker::builder(e.store.clone())
        .register(|_ctx: Context, nap: Nap| async move {
            tokio::time::sleep(Duration::from_millis(nap.ms)).await;
            Ok(())
        })
        .start()
        .unwrap();
    Client::new(e.store.clone())
        .enqueue_many((0..5).map(|_| Nap { ms: 200 }))
        .await
        .unwrap();
    eventually(Duration::from_secs(5), "they run", || async {
        tasks(e.store.as_ref(), "nap")
            .await
            .iter()
            .all(|t| t.state == TaskState::Leased)
    })
    .await;
    let report = worker.shutdown(Duration::from_secs(5)).await;
    assert!(report.finished);
    assert_eq!(report.released, 0);
    assert!(
        tasks(e.store.as_ref(), "nap").await.is_empty(),
        "acks were flushed"
    );
}

#[derive(Serialize, Deserialize)]
struct Quick;

impl Job for Quick {
    const KIND: &'static str = "quick";
}

/// Stopping while claims are in flight under load: what they bring back is
/// released, so nothing is left leased and no attempt is burned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_under_load_leaves_nothing_leased() {
    let e = crate::support::Embedded::open();
    let client = Client::new(e.store.clone());
    for _ in 0..4 {
        client.enqueue_many((0..5000).map(|_| Quick)).await.unwrap();
    }
    let worker = Worker::builder(e.store.clone())
        .queue("quick", QueueConfig::new().concurrency(1000))
        .register(|_ctx: Context, _job: Quick| async { Ok(()) })
        .start()
        .unwrap();
    eventually(Duration::from_secs(5), "some ran", || async {
        crate::support::remaining(e.store.as_ref(), "quick").await < 19_000
    })
    .await;
    let report = worker.shutdown(Duration::from_secs(5)).await;
    assert!(report.finished);
    let left = crate::support::remaining(e.store.as_ref(), "quick").await;
    assert!(left > 0, "stopped too late to test anything");
    let stats = e.store.stats().await.unwrap();
    let counts = stats
        .iter()
        .find(|s| s.name.as_str() == "quick")
        .unwrap()
        .counts;
    assert_eq!(counts.leased, 0, "{counts:?}");
    assert_eq!(counts.ready, left);
    let page = tasks(e.store.as_ref(), "quick").await;
    assert!(page.iter().all(|t| t.attempt == 0), "an attempt was burned");
}
