//! One small app (an order pipeline) that runs in-process on the embedded
//! store, or unchanged against a Spool server.
//!
//! Shows the everyday path: typed jobs enqueued with idempotency keys (a
//! retried request creates nothing twice), two queues with their own
//! concurrency, a handler that enqueues follow-up work through its context,
//! a cron schedule set beside them, and a graceful shutdown. Only the line
//! that opens the store differs between the two modes.
//!
//! In-process: `cargo run -p spool --example app`
//! Against a server: start one (`cargo run -p spool-cli -- serve --data
//! /tmp/spool-app`), then `cargo run -p spool --example app -- --url
//! http://127.0.0.1:7700` (the token, if any, from `SPOOL_TOKEN`).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use spool::{
    Client, Context, EnqueueOptions, Job, PeriodicJob, QueueConfig, Scheduler, Store, TaskError,
    Worker,
};

#[derive(Serialize, Deserialize)]
struct PlaceOrder {
    order: u32,
    cents: u64,
}

impl Job for PlaceOrder {
    const KIND: &'static str = "place_order";
    const QUEUE: &'static str = "orders";
}

#[derive(Serialize, Deserialize)]
struct SendReceipt {
    order: u32,
}

impl Job for SendReceipt {
    const KIND: &'static str = "send_receipt";
    const QUEUE: &'static str = "receipts";
}

#[derive(Serialize, Deserialize)]
struct DailyReport;

impl Job for DailyReport {
    const KIND: &'static str = "daily_report";
    const QUEUE: &'static str = "reports";
}

async fn place_order(ctx: Context, job: PlaceOrder) -> Result<(), TaskError> {
    // Charging the card would go here (idempotently: keyed by the order).
    tokio::time::sleep(Duration::from_millis(5)).await;
    // The receipt is its own task: if mailing fails, the charge is not
    // redone. The key makes a rerun of this handler harmless.
    ctx.client()
        .enqueue_with(
            SendReceipt { order: job.order },
            EnqueueOptions::new().key(format!("receipt:{}", job.order)),
        )
        .await
        .map_err(TaskError::retry)?;
    println!("order {} charged {} cents", job.order, job.cents);
    Ok(())
}

async fn send_receipt(_ctx: Context, job: SendReceipt) -> Result<(), TaskError> {
    println!("receipt for order {} sent", job.order);
    Ok(())
}

async fn daily_report(_ctx: Context, _job: DailyReport) -> Result<(), TaskError> {
    println!("daily report written");
    Ok(())
}

/// The store, and the temporary directory an embedded one lives in.
type Opened = (Arc<dyn Store>, Option<tempfile::TempDir>);

/// `--url URL`: a server; otherwise an embedded store in a temporary
/// directory (kept alive by the returned guard).
fn open_store() -> Result<Opened, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--url") {
        Some(i) => {
            let url = args.get(i + 1).ok_or("--url needs a value")?;
            let store = spool::remote::connect(url, std::env::var("SPOOL_TOKEN").ok())?;
            println!("using the server at {url}");
            Ok((store, None))
        }
        None => {
            let dir = tempfile::tempdir()?;
            let store = spool::embedded::open(dir.path())?;
            println!("using an embedded store in {}", dir.path().display());
            Ok((store, Some(dir)))
        }
    }
}

/// Tasks still to do in `queues`.
async fn pending(store: &dyn Store, queues: &[&str]) -> Result<u64, spool::StoreError> {
    let stats = store.stats().await?;
    Ok(stats
        .iter()
        .filter(|q| queues.contains(&q.name.as_str()))
        .map(|q| q.counts.total() - q.counts.dead)
        .sum())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (store, _dir) = open_store()?;
    let client = Client::new(store.clone());

    client
        .put_schedule(
            PeriodicJob::cron("daily-report", "0 0 9 * * *", DailyReport).tz("Europe/Berlin"),
        )
        .await?;
    let scheduler = Scheduler::new(store.clone()).start()?;
    let worker = Worker::builder(store.clone())
        .queue("orders", QueueConfig::new().concurrency(8))
        .queue("receipts", QueueConfig::new().concurrency(2))
        .register(place_order)
        .register(send_receipt)
        .register(daily_report)
        .start()?;

    for order in 1..=20 {
        let job = PlaceOrder {
            order,
            cents: 1999 + u64::from(order),
        };
        client
            .enqueue_with(job, EnqueueOptions::new().key(format!("order:{order}")))
            .await?;
    }
    // A client that retries after a timeout: the key makes it a no-op.
    let again = client
        .enqueue_with(
            PlaceOrder {
                order: 7,
                cents: 2006,
            },
            EnqueueOptions::new().key("order:7"),
        )
        .await?;
    println!("order 7 enqueued again: duplicate = {}", again.duplicate);

    while pending(store.as_ref(), &["orders", "receipts"]).await? > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for s in client.schedules().await? {
        println!(
            "schedule {} next fires at {:?} (ms since the epoch)",
            s.spec.name,
            s.next_fire_at()
        );
    }
    scheduler.stop().await;
    let report = worker.shutdown(Duration::from_secs(10)).await;
    println!("shut down; every run finished: {}", report.finished);
    Ok(())
}
