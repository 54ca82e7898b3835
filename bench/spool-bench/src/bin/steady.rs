//! The steady state on PostgreSQL as an application runs it (docs/spec.md §11's
//! "8 producers + 8 consumers"): producers enqueue one typed job per call,
//! as fast as they are answered, while one worker pool runs no-op
//! handlers; tasks completed per second, and pickup latency (enqueue call
//! to the handler's start).
//!
//! Unlike `spool bench --workload cycle`, whose consumers are independent
//! claim loops, the consumers here are the runtime's: one acquisition loop
//! claims for every free slot, and acks go out in batches.
//!
//! Run (release): `cargo run --release -p spool-bench --bin steady --
//! --postgres postgres://postgres@127.0.0.1:5432/test`. Options:
//! `--schema S` (default `spool_steady_rt`; dropped and created afresh,
//! so every run starts from an empty table), `--producers N` (8),
//! `--concurrency N` (8), `--seconds N` (10), `--rotate-ms MS` and
//! `--rotate-size BYTES` (the ring's turns; the store's defaults).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use spool::postgres::PgConfig;
use spool::{Client, Context, Job, QueueConfig, TaskError, Worker};
use spool_bench::db::drop_schema;

#[derive(Serialize, Deserialize)]
struct Noop {
    /// When its enqueue was called, in µs since the run began.
    sent_us: u64,
    pad: String,
}

impl Job for Noop {
    const KIND: &'static str = "noop";
}

/// docs/spec.md §11's steady state on PostgreSQL, through the worker runtime.
#[derive(Parser)]
struct Options {
    /// The database.
    #[arg(
        long = "postgres",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    url: String,
    /// The store's schema: dropped and created afresh.
    #[arg(long, default_value = "spool_steady_rt")]
    schema: String,
    /// Callers enqueuing one task per call.
    #[arg(long, default_value_t = 8)]
    producers: usize,
    /// Slots of the worker pool.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// How long the producers run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The ring's turn interval (`PgConfig::rotate_interval`), in ms;
    /// the store's default when absent.
    #[arg(long)]
    rotate_ms: Option<u64>,
    /// The generation size that turns the ring sooner
    /// (`PgConfig::rotate_size`), in bytes; the store's default when absent.
    #[arg(long)]
    rotate_size: Option<u64>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = Options::parse();
    // Dropped, so the store creates it afresh.
    drop_schema(&o.url, &o.schema).await;
    let mut config = PgConfig {
        schema: o.schema.clone(),
        ..PgConfig::default()
    };
    if let Some(ms) = o.rotate_ms {
        config.rotate_interval = Duration::from_millis(ms);
    }
    if let Some(bytes) = o.rotate_size {
        config.rotate_size = bytes;
    }
    let store = spool::postgres::connect_with(&o.url, config).await?;
    let client = Client::new(store.clone());
    let begun = Instant::now();

    let done = Arc::new(AtomicU64::new(0));
    // 1 µs to 60 s: saturating_record clamps to the bounds, never resizes.
    let pickup = Arc::new(Mutex::new(Histogram::<u64>::new_with_bounds(
        1, 60_000_000, 3,
    )?));
    let handler = {
        let (done, pickup) = (done.clone(), pickup.clone());
        move |_ctx: Context, job: Noop| {
            let waited = (begun.elapsed().as_micros() as u64).saturating_sub(job.sent_us);
            if let Ok(mut h) = pickup.lock() {
                h.saturating_record(waited);
            }
            done.fetch_add(1, Ordering::Relaxed);
            async { Ok::<(), TaskError>(()) }
        }
    };
    let worker = Worker::builder(store.clone())
        .queue(Noop::QUEUE, QueueConfig::new().concurrency(o.concurrency))
        .register(handler)
        .start()?;

    let until = begun + Duration::from_secs(o.seconds);
    let mut producers = tokio::task::JoinSet::new();
    for _ in 0..o.producers {
        let client = client.clone();
        producers.spawn(async move {
            let mut sent = 0u64;
            while Instant::now() < until {
                let job = Noop {
                    sent_us: begun.elapsed().as_micros() as u64,
                    pad: "x".repeat(70),
                };
                client.enqueue(job).await?;
                sent += 1;
            }
            Ok::<u64, spool::EnqueueError>(sent)
        });
    }
    let mut enqueued = 0;
    while let Some(sent) = producers.join_next().await {
        enqueued += sent??;
    }
    let completed = done.load(Ordering::Relaxed);
    let took = begun.elapsed().as_secs_f64();
    worker.shutdown(Duration::from_secs(5)).await;

    let h = pickup.lock().map_err(|_| "a handler panicked")?;
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{} producers (one task per call) + a worker pool of {}, {:.1} s: \
         {:.0} tasks/s completed, {:.0}/s enqueued; pickup p50 {:.2} ms, p99 {:.2} ms",
        o.producers,
        o.concurrency,
        took,
        completed as f64 / took,
        enqueued as f64 / took,
        ms(0.5),
        ms(0.99),
    );
    Ok(())
}
