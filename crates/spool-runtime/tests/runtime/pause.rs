//! Pausing a queue stops processing (claims yield nothing) and resuming
//! restarts it at once (the long poll is woken); a rate limit spaces runs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use spool_runtime::{Client, Context, Job, QueueConfig, Worker};

use crate::support::{eventually, remaining};

#[derive(Serialize, Deserialize)]
struct Tick;

impl Job for Tick {
    const KIND: &'static str = "tick";
}

fn counting(ran: &Arc<AtomicU32>) -> impl Fn(Context, Tick) -> futures_ready::Ready + Clone {
    let ran = ran.clone();
    move |_ctx, _job| {
        ran.fetch_add(1, Ordering::SeqCst);
        futures_ready::Ready
    }
}

/// A handler future that is ready at once.
mod futures_ready {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub(super) struct Ready;

    impl Future for Ready {
        type Output = Result<(), spool_runtime::TaskError>;
        fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
            Poll::Ready(Ok(()))
        }
    }
}

#[tokio::test]
async fn pause_stops_and_resume_restarts_processing() {
    let e = crate::support::Embedded::open();
    let client = Client::new(e.store.clone());
    let ran = Arc::new(AtomicU32::new(0));
    let worker = Worker::builder(e.store.clone())
        .register(counting(&ran))
        .start()
        .unwrap();
    client.enqueue(Tick).await.unwrap();
    eventually(Duration::from_secs(5), "one ran", || async {
        ran.load(Ordering::SeqCst) == 1
    })
    .await;

    client.pause("tick").await.unwrap();
    client.enqueue_many((0..5).map(|_| Tick)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ran.load(Ordering::SeqCst), 1, "nothing runs while paused");
    assert_eq!(remaining(e.store.as_ref(), "tick").await, 5);

    let resumed = Instant::now();
    client.resume("tick").await.unwrap();
    eventually(Duration::from_secs(5), "the rest ran", || async {
        ran.load(Ordering::SeqCst) == 6
    })
    .await;
    assert!(
        resumed.elapsed() < Duration::from_millis(500),
        "resume woke the worker: {:?}",
        resumed.elapsed()
    );
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);
}

#[tokio::test]
async fn a_rate_limit_spaces_runs() {
    let e = crate::support::Embedded::open();
    let ran = Arc::new(AtomicU32::new(0));
    Client::new(e.store.clone())
        .enqueue_many((0..20).map(|_| Tick))
        .await
        .unwrap();
    let started = Instant::now();
    let worker = Worker::builder(e.store.clone())
        .queue("tick", QueueConfig::new().concurrency(20).rate_limit(20.0))
        .register(counting(&ran))
        .start()
        .unwrap();
    eventually(Duration::from_secs(5), "all ran", || async {
        ran.load(Ordering::SeqCst) == 20
    })
    .await;
    // A burst of 2, then one per 50 ms.
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(800), "{took:?}");
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);
}
