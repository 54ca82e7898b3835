//! Many tasks resident at once: what each costs in memory and on disk, and
//! whether claims stay as fast as on an empty store.
//!
//! ```sh
//! cargo run --release -p spool-cli --example resident -- --tasks 100000000
//! ```
//!
//! Fills one queue with `--tasks` tasks (100-byte payloads, batches of
//! 1,000), and at every power of ten on the way (and at the end) reports
//! the fill rate, resident memory per task (RSS growth over the empty
//! store, allocator included), log bytes per task, and claim latency: a
//! claim of 100 from the full queue and from a small other queue, each
//! acked. Then restarts the engine (checkpoint + replay) and times it,
//! drains everything, and reports memory and disk after the drain.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use hdrhistogram::Histogram;
use spool_core::{ClaimRequest, LeaseToken, NewTask, Payload, QueueName, Store, TaskId};
use spool_engine::{Engine, EngineConfig};

/// The allocator `spool serve` runs with, set up as it sets it up, so
/// memory figures match it.
#[path = "../src/allocator.rs"]
mod allocator;

/// Enqueue batches in flight at once while filling.
const PRODUCERS: usize = 8;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Fills one queue and measures what resident tasks cost.
#[derive(Debug, Parser)]
struct Args {
    /// Tasks to fill the queue with.
    #[arg(long, default_value_t = 1_000_000)]
    tasks: u64,
    /// Data directory (default: a temporary one, removed at the end).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Claims timed at each report point (a fifth of them on the full queue).
    #[arg(long, default_value_t = 500)]
    samples: usize,
}

/// Resident set size of this process, from /proc.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn name(s: &str) -> Result<QueueName> {
    Ok(QueueName::new(s)?)
}

fn payload(i: u64) -> Payload {
    let mut body = format!("{{\"task\":{i},\"pad\":\"");
    while body.len() < 98 {
        body.push('x');
    }
    body.push_str("\"}");
    Payload::json(body.into_bytes())
}

/// Claims `max` from `queue` and acks them, `samples` times; (p50, p99) µs
/// of the claim alone.
async fn claim_latency(
    engine: &Engine,
    queue: &QueueName,
    samples: usize,
    refill: bool,
) -> Result<(u64, u64)> {
    let mut h = Histogram::<u64>::new(3)?;
    for i in 0..samples {
        if refill {
            let tasks = (0..100)
                .map(|j| NewTask::new(payload(i as u64 * 100 + j)))
                .collect();
            engine.enqueue(queue, tasks).await?;
        }
        let start = Instant::now();
        let claimed = engine
            .claim(ClaimRequest::new(queue.clone(), "resident").max(100))
            .await?;
        h.record(start.elapsed().as_micros() as u64)?;
        let acks: Vec<(TaskId, LeaseToken)> = claimed
            .iter()
            .filter_map(|t| Some((t.id, t.lease.as_ref()?.token)))
            .collect();
        engine.ack_many(acks).await?;
    }
    Ok((h.value_at_quantile(0.5), h.value_at_quantile(0.99)))
}

#[tokio::main]
async fn main() -> Result<()> {
    allocator::return_freed_memory_at_once();
    let a = Args::parse();
    let tmp;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let (bulk, probe) = (name("bulk")?, name("probe")?);
    let engine = Arc::new(Engine::open(EngineConfig::new(&dir))?);
    // Queues exist and the allocator is warm before the baseline.
    engine
        .enqueue(&probe, vec![NewTask::new(payload(0))])
        .await?;
    let (p50, p99) = claim_latency(&engine, &probe, a.samples, true).await?;
    let base_rss = rss();
    println!(
        "empty store: rss {} MiB, claim of 100 p50 {p50} µs p99 {p99} µs",
        base_rss >> 20
    );
    println!(
        "{:>12} {:>10} {:>9} {:>9} {:>22} {:>22}",
        "tasks", "fill/s", "rss B/t", "disk B/t", "claim p50/p99 same q", "claim p50/p99 other q"
    );
    let start = Instant::now();
    let mut next_report = 1_000_000.min(a.tasks);
    let mut done = 0u64;
    let mut last = (Instant::now(), 0u64);
    while done < a.tasks {
        // Several batches in flight, as several producers would send them:
        // they share group commits.
        let mut round = tokio::task::JoinSet::new();
        for _ in 0..PRODUCERS {
            let n = 1000.min(a.tasks - done);
            if n == 0 {
                break;
            }
            let tasks: Vec<NewTask> = (done..done + n).map(|i| NewTask::new(payload(i))).collect();
            let (engine, bulk) = (Arc::clone(&engine), bulk.clone());
            round.spawn(async move { engine.enqueue(&bulk, tasks).await });
            done += n;
        }
        while let Some(r) = round.join_next().await {
            r??;
        }
        if done >= next_report {
            let rate = (done - last.1) as f64 / last.0.elapsed().as_secs_f64();
            let per_task = rss().saturating_sub(base_rss) as f64 / done as f64;
            let disk = dir_bytes(&dir) as f64 / done as f64;
            let same = claim_latency(&engine, &bulk, a.samples / 5, false).await?;
            let other = claim_latency(&engine, &probe, a.samples, true).await?;
            println!(
                "{done:>12} {rate:>10.0} {per_task:>9.1} {disk:>9.1} {:>13}/{:<8} {:>13}/{:<8}",
                same.0, same.1, other.0, other.1
            );
            while next_report <= done && next_report < a.tasks {
                next_report = (next_report * 10).min(a.tasks);
            }
            last = (Instant::now(), done);
        }
    }
    println!(
        "filled {done} tasks in {:.1} s",
        start.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    engine.checkpoint().await?;
    println!(
        "checkpoint of {done} tasks: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    drop(Arc::try_unwrap(engine).map_err(|_| "the engine is still shared")?);
    let t = Instant::now();
    let engine = Engine::open(EngineConfig::new(&dir))?;
    println!("restart: {:.1} s", t.elapsed().as_secs_f64());
    // Again once the fill's writes have settled: latency here is the
    // claim's own cost plus one quiet fsync, not the disk catching up.
    let same = claim_latency(&engine, &bulk, a.samples / 5, false).await?;
    let other = claim_latency(&engine, &probe, a.samples, true).await?;
    println!(
        "after the restart: claim of 100 p50/p99 {}/{} µs from the full queue, {}/{} µs from another",
        same.0, same.1, other.0, other.1
    );

    let t = Instant::now();
    let mut drained = 0u64;
    loop {
        let claimed = engine
            .claim(ClaimRequest::new(bulk.clone(), "resident").max(1000))
            .await?;
        if claimed.is_empty() {
            break;
        }
        drained += claimed.len() as u64;
        let acks = claimed
            .iter()
            .filter_map(|t| Some((t.id, t.lease.as_ref()?.token)))
            .collect();
        engine.ack_many(acks).await?;
    }
    println!("drained {drained} in {:.1} s", t.elapsed().as_secs_f64());
    engine.checkpoint().await?;
    engine.checkpoint().await?;
    println!(
        "after the drain: rss {} MiB (empty store: {} MiB), disk {} MiB",
        rss() >> 20,
        base_rss >> 20,
        dir_bytes(&dir) >> 20
    );
    Ok(())
}
