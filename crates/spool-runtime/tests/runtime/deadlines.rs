//! Deadlines: a run that ignores its deadline (the lease, or the handler's
//! timeout) is cut off and failed with "deadline exceeded", and its
//! cancellation token fires; a run that heartbeats keeps going past its
//! first lease.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use spool_core::TaskState;
use spool_runtime::{Client, Context, Handler, Job, QueueConfig, TaskError, Worker};

use crate::support::{eventually, fast_queue, remaining};

#[derive(Serialize, Deserialize)]
struct Stuck;

impl Job for Stuck {
    const KIND: &'static str = "stuck";
}

/// Ignores its deadline; notices the cancellation on the side.
#[derive(Clone, Default)]
struct Ignorer {
    cancelled: Arc<AtomicBool>,
    remaining_at_start: Arc<AtomicU32>,
}

impl Handler<Stuck> for Ignorer {
    async fn run(&self, ctx: Context, _job: Stuck) -> Result<(), TaskError> {
        self.remaining_at_start
            .store(ctx.remaining().as_millis() as u32, Ordering::SeqCst);
        let token = ctx.cancellation().clone();
        let flag = self.cancelled.clone();
        tokio::spawn(async move {
            token.cancelled().await;
            flag.store(true, Ordering::SeqCst);
        });
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(())
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_millis(300))
    }
}

#[tokio::test]
async fn a_run_past_its_timeout_is_cut_off_and_failed() {
    let e = crate::support::Embedded::open();
    fast_queue(e.store.as_ref(), "stuck", 1).await;
    let handler = Ignorer::default();
    let worker = Worker::builder(e.store.clone())
        .register(handler.clone())
        .start()
        .unwrap();
    let started = Instant::now();
    let id = Client::new(e.store.clone())
        .enqueue(Stuck)
        .await
        .unwrap()
        .id;
    eventually(Duration::from_secs(5), "the run is dead", || async {
        matches!(e.store.get(id.into()).await, Ok(t) if t.state == TaskState::Dead)
    })
    .await;
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    let t = e.store.get(id.into()).await.unwrap();
    assert_eq!(t.errors[0].message, "deadline exceeded");
    let at_start = handler.remaining_at_start.load(Ordering::SeqCst);
    assert!(
        (250..=300).contains(&at_start),
        "remaining() at start: {at_start}"
    );
    eventually(Duration::from_secs(1), "the token fired", || async {
        handler.cancelled.load(Ordering::SeqCst)
    })
    .await;
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);
}

#[derive(Serialize, Deserialize)]
struct Long;

impl Job for Long {
    const KIND: &'static str = "long";
}

#[tokio::test]
async fn the_lease_is_the_deadline_and_heartbeats_extend_it() {
    let e = crate::support::Embedded::open();
    fast_queue(e.store.as_ref(), "long", 1).await;
    // A beat every 100 ms leaves 900 ms for one to be late on a loaded
    // machine before the lease ends under a run that does beat.
    let lease = Duration::from_millis(1000);
    let worker = Worker::builder(e.store.clone())
        .queue("long", QueueConfig::new().lease(lease))
        .register(|ctx: Context, _job: Long| async move {
            let beat = ctx.key().is_some_and(|k| k.as_str() == "beats");
            let first = ctx.deadline();
            // Three leases long.
            for _ in 0..30 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if beat {
                    ctx.heartbeat().await?;
                }
            }
            assert!(ctx.deadline() > first);
            Ok(())
        })
        .start()
        .unwrap();
    let client = Client::new(e.store.clone());
    let beats = client
        .enqueue_with(Long, spool_runtime::EnqueueOptions::new().key("beats"))
        .await
        .unwrap()
        .id;
    let silent = client.enqueue(Long).await.unwrap().id;
    eventually(Duration::from_secs(5), "the silent run is dead", || async {
        matches!(e.store.get(silent.into()).await, Ok(t) if t.state == TaskState::Dead)
    })
    .await;
    let t = e.store.get(silent.into()).await.unwrap();
    assert_eq!(t.errors[0].message, "deadline exceeded");
    eventually(
        Duration::from_secs(10),
        "the beating run completed",
        || async { remaining(e.store.as_ref(), "long").await == 1 },
    )
    .await;
    assert!(
        e.store.get(beats.into()).await.is_err(),
        "completed and deleted"
    );
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);
}
