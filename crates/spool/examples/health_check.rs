//! A one-second health-check schedule with a 500 ms deadline.
//!
//! Shows a `PeriodicJob` fired by a `Scheduler`: one task per tick, on the
//! multiples of the period, whatever number of schedulers run. The fake
//! probe sometimes hangs; at 500 ms the run is cut off ("deadline
//! exceeded", its cancellation token fires) and the next tick fires anyway.
//! Each line shows how late the run started after its tick.
//!
//! Run: `cargo run -p spool --example health_check` (`-- 20` for 20 seconds;
//! default 10).

use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};
use spool::core::{Clock, SystemClock};
use spool::{
    Client, Context, Job, PeriodicJob, QueueChange, QueueName, Scheduler, Store, TaskError, Worker,
};

#[derive(Serialize, Deserialize, Clone)]
struct HealthCheck {
    service: String,
}

impl Job for HealthCheck {
    const KIND: &'static str = "health_check";
}

/// A probe that usually answers in a few ms and sometimes hangs.
async fn probe(service: &str) -> Result<Duration, TaskError> {
    let took = if rand::thread_rng().gen_bool(0.2) {
        Duration::from_secs(5)
    } else {
        Duration::from_millis(rand::thread_rng().gen_range(1..50))
    };
    tokio::time::sleep(took).await;
    if service.is_empty() {
        return Err(TaskError::permanent("no service to check"));
    }
    Ok(took)
}

async fn check(ctx: Context, job: HealthCheck) -> Result<(), TaskError> {
    // The tick's time is in the task's key; the store's clock is the
    // embedded engine's, this process's.
    let late = ctx
        .scheduled_tick()
        .map_or(0, |tick| SystemClock.now().as_millis() - tick.as_millis());
    // Nothing to do about the deadline here: at 500 ms the runtime drops
    // this future. (Work handed to other tasks would watch
    // `ctx.cancellation()`.)
    let took = probe(&job.service).await?;
    println!(
        "{}: healthy in {took:?}, run started {late} ms after its tick",
        job.service
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The runtime's warnings show the runs cut off at the deadline.
    tracing_subscriber::fmt()
        .with_env_filter("warn,spool_runtime=info")
        .init();
    let seconds: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10);
    let dir = tempfile::tempdir()?;
    let store = spool::embedded::open(dir.path())?;
    // A missed check is not retried: the next tick is the retry.
    let change = QueueChange {
        max_attempts: Some(1),
        ..QueueChange::default()
    };
    store
        .put_queue(&QueueName::new(HealthCheck::QUEUE)?, change)
        .await?;
    Client::new(store.clone())
        .put_schedule(
            PeriodicJob::every(
                "health",
                Duration::from_secs(1),
                HealthCheck {
                    service: "billing-api".into(),
                },
            )
            .deadline(Duration::from_millis(500)),
        )
        .await?;
    let worker = Worker::builder(store.clone()).register(check).start()?;
    let scheduler = Scheduler::new(store.clone()).start()?;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    scheduler.stop().await;
    worker.shutdown(Duration::from_secs(1)).await;
    let dead = store
        .stats()
        .await?
        .iter()
        .map(|q| q.counts.dead)
        .sum::<u64>();
    println!("{seconds} s done; {dead} checks were cut off at the deadline");
    Ok(())
}
