//! The runtime's numbers on the embedded engine (docs/spec.md §11): in-process
//! enqueue → run → ack of no-op handlers, idle pickup latency, and the
//! firing jitter of periodic schedules, first ticks included (also of
//! schedules put while no other runs).
//!
//! Shows what one process gets from Spool with durable settings (every
//! enqueue, claim and ack is on disk before it returns). Payloads are about
//! 100 bytes of JSON.
//!
//! Run (release, or the numbers mean little):
//! `cargo run --release -p spool-bench --bin throughput`
//! Options: `--tasks N` (default 1,000,000), `--concurrency N` (2000),
//! `--pickups N` (2000), `--schedule-ms P` (1000) and `--schedule-secs S`
//! (20; 0 skips the schedule), `--dir DIR` (default: a temporary
//! directory).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use spool::core::schedule::tick_key;
use spool::core::{Clock, SystemClock, TaskRef};
use spool::{Client, Context, Job, PeriodicJob, QueueConfig, Scheduler, Store, TaskError, Worker};
use tokio::sync::mpsc;

#[derive(Serialize, Deserialize)]
struct Noop {
    pad: String,
}

impl Job for Noop {
    const KIND: &'static str = "noop";
}

#[derive(Serialize, Deserialize)]
struct Pickup;

impl Job for Pickup {
    const KIND: &'static str = "pickup";
}

#[derive(Serialize, Deserialize)]
struct Tick;

impl Job for Tick {
    const KIND: &'static str = "tick";
}

struct Options {
    tasks: u64,
    concurrency: usize,
    pickups: u32,
    schedule_ms: u64,
    schedule_secs: u64,
    dir: Option<String>,
}

fn options() -> Result<Options, Box<dyn std::error::Error>> {
    let mut o = Options {
        tasks: 1_000_000,
        concurrency: 2000,
        pickups: 2000,
        schedule_ms: 1000,
        schedule_secs: 20,
        dir: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair
            .get(1)
            .ok_or_else(|| format!("{} needs a value", pair[0]))?;
        match pair[0].as_str() {
            "--tasks" => o.tasks = value.parse()?,
            "--concurrency" => o.concurrency = value.parse()?,
            "--pickups" => o.pickups = value.parse()?,
            "--schedule-ms" => o.schedule_ms = value.parse()?,
            "--schedule-secs" => o.schedule_secs = value.parse()?,
            "--dir" => o.dir = Some(value.clone()),
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(o)
}

/// Tasks still in the store, in any state.
async fn left(store: &dyn Store) -> Result<u64, spool::StoreError> {
    Ok(store.stats().await?.iter().map(|q| q.counts.total()).sum())
}

fn noops(n: u64) -> impl Iterator<Item = Noop> {
    (0..n).map(|_| Noop {
        pad: "x".repeat(90),
    })
}

/// Enqueues `tasks` in batches while a worker drains them; returns the
/// rate from the first enqueue to the last ack.
async fn end_to_end(store: Arc<dyn Store>, o: &Options) -> Result<f64, Box<dyn std::error::Error>> {
    let client = Client::new(store.clone());
    let worker = Worker::builder(store.clone())
        .queue("noop", QueueConfig::new().concurrency(o.concurrency))
        .register(|_ctx: Context, _job: Noop| async { Ok::<(), TaskError>(()) })
        .start()?;
    let start = Instant::now();
    let producer = {
        let client = client.clone();
        let tasks = o.tasks;
        tokio::spawn(async move {
            let mut sent = 0;
            while sent < tasks {
                let n = (tasks - sent).min(10_000);
                client.enqueue_many(noops(n)).await?;
                sent += n;
            }
            Ok::<(), spool::EnqueueError>(())
        })
    };
    producer.await??;
    let enqueued = start.elapsed();
    while left(store.as_ref()).await? > 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let took = start.elapsed();
    worker.shutdown(Duration::from_secs(5)).await;
    println!(
        "enqueue → run → ack, {} no-op tasks, concurrency {}: {:.0} tasks/s ({:.2} s; the producer finished after {:.2} s)",
        o.tasks,
        o.concurrency,
        o.tasks as f64 / took.as_secs_f64(),
        took.as_secs_f64(),
        enqueued.as_secs_f64()
    );
    Ok(o.tasks as f64 / took.as_secs_f64())
}

/// Enqueues everything first, then times the drain alone.
async fn drain(store: Arc<dyn Store>, o: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::new(store.clone());
    let start = Instant::now();
    let mut sent = 0;
    while sent < o.tasks {
        let n = (o.tasks - sent).min(10_000);
        client.enqueue_many(noops(n)).await?;
        sent += n;
    }
    let enqueue = start.elapsed();
    let start = Instant::now();
    let worker = Worker::builder(store.clone())
        .queue("noop", QueueConfig::new().concurrency(o.concurrency))
        .register(|_ctx: Context, _job: Noop| async { Ok::<(), TaskError>(()) })
        .start()?;
    while left(store.as_ref()).await? > 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let took = start.elapsed();
    worker.shutdown(Duration::from_secs(5)).await;
    println!(
        "batched enqueue (10,000 per call): {:.0} tasks/s; then a drain of {}: {:.0} tasks/s",
        o.tasks as f64 / enqueue.as_secs_f64(),
        o.tasks,
        o.tasks as f64 / took.as_secs_f64()
    );
    Ok(())
}

/// One task at a time to an idle worker: how long until its run starts.
async fn pickup(store: Arc<dyn Store>, o: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Instant>();
    let worker = Worker::builder(store.clone())
        .register(move |_ctx: Context, _job: Pickup| {
            let _ = tx.send(Instant::now());
            async { Ok::<(), TaskError>(()) }
        })
        .start()?;
    let client = Client::new(store.clone());
    let mut from_call = Histogram::<u64>::new(3)?;
    let mut from_durable = Histogram::<u64>::new(3)?;
    for _ in 0..o.pickups {
        // Let the worker go idle: its claim is parked in the engine.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let called = Instant::now();
        client.enqueue(Pickup).await?;
        let durable = Instant::now();
        let started = rx.recv().await.ok_or("the worker stopped")?;
        from_call.record(started.duration_since(called).as_micros() as u64)?;
        from_durable.record(started.saturating_duration_since(durable).as_micros() as u64)?;
    }
    worker.shutdown(Duration::from_secs(5)).await;
    let p = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "idle pickup, {} tasks: from the enqueue's return (durable, ready) p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; \
         from the enqueue call (includes its fsync) p50 {:.3} ms, p99 {:.3} ms",
        o.pickups,
        p(&from_durable, 0.5),
        p(&from_durable, 0.99),
        from_durable.max() as f64 / 1000.0,
        p(&from_call, 0.5),
        p(&from_call, 0.99),
    );
    Ok(())
}

/// Periodic schedules put while the scheduler runs, one about every 1.1 s
/// (so at every moment of its refresh cycle): how late each tick is fired
/// and its run started, first ticks included and also shown apart. A first
/// tick is measured from the `next_fire_at` the put answered, so a first
/// tick fired so late that it collapsed into a later one counts that late,
/// and a schedule that never fired is reported.
async fn jitter(store: Arc<dyn Store>, o: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let period = Duration::from_millis(o.schedule_ms);
    // (tick, fired after it, run started after it), by schedule.
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, i64, i64, i64)>();
    let worker = Worker::builder(store.clone())
        .register(move |ctx: Context, _job: Tick| {
            // The embedded engine's clock is this machine's.
            let now = SystemClock.now().as_millis();
            if let (Some(tick), Some(key)) = (ctx.scheduled_tick(), ctx.key()) {
                let name = key.as_str().rsplit_once(':').map_or("", |(n, _)| n);
                let fired = ctx.task().created_at.as_millis() - tick.as_millis();
                let _ = tx.send((
                    name.to_string(),
                    tick.as_millis(),
                    fired,
                    now - tick.as_millis(),
                ));
            }
            async { Ok::<(), TaskError>(()) }
        })
        .start()?;
    let scheduler = Scheduler::new(store.clone()).start()?;
    let client = Client::new(store.clone());
    let end = Instant::now() + Duration::from_secs(o.schedule_secs);
    let mut schedules = 0;
    // The first tick each put announced, by schedule (its ticks' key
    // without the tick, as the handler groups them).
    let mut announced = HashMap::new();
    while Instant::now() < end {
        let put = client
            .put_schedule(PeriodicJob::every(
                format!("bench-{schedules}"),
                period,
                Tick,
            ))
            .await?;
        let first = put.next_fire_at().ok_or("a new schedule without a tick")?;
        let key = tick_key(&put.spec.name, first);
        let name = key.as_str().rsplit_once(':').map_or("", |(n, _)| n);
        announced.insert(name.to_string(), first.as_millis());
        schedules += 1;
        tokio::time::sleep(Duration::from_millis(1_137)).await;
    }
    scheduler.stop().await;
    worker.shutdown(Duration::from_secs(5)).await;
    let mut ticks = Vec::new();
    while let Ok(t) = rx.try_recv() {
        ticks.push(t);
    }
    ticks.sort();
    let mut all = (Histogram::<u64>::new(3)?, Histogram::<u64>::new(3)?);
    let mut first = (Histogram::<u64>::new(3)?, Histogram::<u64>::new(3)?);
    let late = |ms: i64| ms.max(0).unsigned_abs();
    for (i, (name, tick, f, s)) in ticks.iter().enumerate() {
        let is_first = i == 0 || ticks[i - 1].0 != *name;
        // Ticks before the first fired one were missed: count from the first.
        let skipped = if is_first {
            announced.remove(name).map_or(0, |first| tick - first)
        } else {
            0
        };
        let (f, s) = (late(f + skipped), late(s + skipped));
        all.0.record(f)?;
        all.1.record(s)?;
        if is_first {
            first.0.record(f)?;
            first.1.record(s)?;
        }
    }
    if !announced.is_empty() {
        println!("schedules that never fired: {}", announced.len());
    }
    for (what, (fired, started)) in [("every tick", &all), ("first ticks", &first)] {
        println!(
            "{schedules} schedules every {} ms put over {} s, {what} ({}): fired after the tick \
             p50 {} ms, p99 {} ms, max {} ms; run started p50 {} ms, p99 {} ms, max {} ms",
            o.schedule_ms,
            o.schedule_secs,
            fired.len(),
            fired.value_at_quantile(0.5),
            fired.value_at_quantile(0.99),
            fired.max(),
            started.value_at_quantile(0.5),
            started.value_at_quantile(0.99),
            started.max(),
        );
    }
    Ok(())
}

/// How late the first tick of a schedule put while no other schedule runs
/// is fired, over `LONE` schedules put one at a time at different moments
/// of the scheduler's refresh cycle. With other schedules ticking on the
/// same whole seconds the scheduler reads its list right after each tick,
/// which hides a new schedule waiting for that read; alone, it cannot.
async fn lone_first_ticks(
    store: Arc<dyn Store>,
    o: &Options,
) -> Result<(), Box<dyn std::error::Error>> {
    const LONE: u64 = 12;
    let scheduler = Scheduler::new(store.clone()).start()?;
    let client = Client::new(store.clone());
    let mut late = Histogram::<u64>::new(3)?;
    let mut missed = 0;
    for i in 0..LONE {
        tokio::time::sleep(Duration::from_millis(137 + (i * 379) % 1000)).await;
        let put = client
            .put_schedule(PeriodicJob::every(
                format!("lone-{i}"),
                Duration::from_millis(o.schedule_ms),
                Tick,
            ))
            .await?;
        let first = put.next_fire_at().ok_or("a new schedule without a tick")?;
        let key = TaskRef::Key(put.spec.queue.clone(), tick_key(&put.spec.name, first));
        let give_up = first.as_millis() + 3 * o.schedule_ms as i64;
        loop {
            if let Ok(task) = store.get(key.clone()).await {
                late.record((task.created_at.as_millis() - first.as_millis()).max(0) as u64)?;
                break;
            }
            if SystemClock.now().as_millis() > give_up {
                missed += 1;
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        client.delete_schedule(put.spec.name.as_str()).await?;
    }
    scheduler.stop().await;
    println!(
        "{LONE} schedules every {} ms, each put alone, first ticks: fired after the tick \
         p50 {} ms, p99 {} ms, max {} ms; not fired within 3 periods: {missed}",
        o.schedule_ms,
        late.value_at_quantile(0.5),
        late.value_at_quantile(0.99),
        late.max(),
    );
    Ok(())
}

async fn fresh_store(
    o: &Options,
) -> Result<(Arc<dyn Store>, tempfile::TempDir), Box<dyn std::error::Error>> {
    let dir = match &o.dir {
        Some(d) => tempfile::tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };
    let store = spool::embedded::open(dir.path())?;
    Ok((store, dir))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = options()?;
    println!(
        "spool runtime benchmark: embedded engine, {} cores, durable (fdatasync per group commit)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let (store, _dir) = fresh_store(&o).await?;
    end_to_end(store, &o).await?;
    let (store, _dir) = fresh_store(&o).await?;
    drain(store, &o).await?;
    let (store, _dir) = fresh_store(&o).await?;
    pickup(store, &o).await?;
    if o.schedule_secs > 0 {
        let (store, _dir) = fresh_store(&o).await?;
        jitter(store, &o).await?;
        let (store, _dir) = fresh_store(&o).await?;
        lone_first_ticks(store, &o).await?;
    }
    Ok(())
}
