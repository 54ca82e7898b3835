//! A queue's claim limits set through `Client::change_queue` (docs/spec.md
//! §4): read back with `Client::queue_settings`, obeyed by a worker that
//! would run more at once, and removed one at a time while the others stay.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use spool_core::{QueueChange, RateLimit};
use spool_runtime::{Client, Context, Handler, Job, QueueConfig, TaskError, Worker};

use crate::support::{eventually, Embedded};

#[derive(Serialize, Deserialize)]
struct Metered;

impl Job for Metered {
    const KIND: &'static str = "metered";
}

/// Counts the runs in progress and the most there ever were at once.
#[derive(Clone, Default)]
struct Counting {
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
}

impl Handler<Metered> for Counting {
    async fn run(&self, _ctx: Context, _job: Metered) -> Result<(), TaskError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Before the ack: a run counted here still holds its lease.
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_set_through_the_client_bind_the_worker() {
    let e = Embedded::open();
    let client = Client::new(e.store.clone());
    let rate = RateLimit {
        limit: 1000,
        period: Duration::from_secs(1),
        burst: 100,
    };
    let change = QueueChange {
        rate_limit: Some(Some(rate)),
        max_leased: Some(Some(2)),
        group_concurrency: Some(Some(4)),
        ..QueueChange::default()
    };
    let set = client.change_queue("metered", change).await.unwrap();
    let read = client.queue_settings("metered").await.unwrap();
    assert_eq!(set, read);
    assert_eq!(
        (read.rate_limit, read.max_leased, read.group_concurrency),
        (Some(rate), Some(2), Some(4))
    );

    let handler = Counting::default();
    let worker = Worker::builder(e.store.clone())
        .queue("metered", QueueConfig::new().concurrency(10))
        .register(handler.clone())
        .start()
        .unwrap();
    client.enqueue_many((0..8).map(|_| Metered)).await.unwrap();
    eventually(Duration::from_secs(10), "every task ran", || async {
        handler.done.load(Ordering::SeqCst) == 8
    })
    .await;
    let peak = handler.peak.load(Ordering::SeqCst);
    assert!(peak <= 2, "{peak} ran at once under max_leased 2");
    worker.shutdown(Duration::from_secs(1)).await;

    let lifted = QueueChange {
        max_leased: Some(None),
        ..QueueChange::default()
    };
    let now = client.change_queue("metered", lifted).await.unwrap();
    assert_eq!(now.max_leased, None);
    assert_eq!(
        (now.rate_limit, now.group_concurrency),
        (Some(rate), Some(4)),
        "the limits the change did not name stay"
    );
    assert!(client.queue_settings("never-made").await.is_err());
}
