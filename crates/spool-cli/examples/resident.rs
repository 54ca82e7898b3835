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
//! claim of 100 from the full queue, from a small other queue, and from an
//! empty store of its own on the same disk, taken in turn so that the
//! machine's noise falls on all three alike, each acked. Then restarts the engine (checkpoint + replay) and times it and
//! the claims again. Then compaction: `--compact` tasks are claimed from the
//! front, nine in ten acked and one failed for good (dead tasks keep their
//! payloads), so those segments go mostly dead; a checkpoint hands their
//! survivors to compaction, and the example reports its throughput and the
//! latency of single enqueues while it runs, against the same enqueues
//! before it started. Last, unless `--no-drain`, it drains everything and
//! reports memory and disk after the drain.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use hdrhistogram::Histogram;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use spool_core::{
    ClaimRequest, FailRequest, LeaseToken, NewTask, Payload, QueueName, Store, TaskId,
};
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
    /// Rounds of claims timed at each report point (one claim of each kind
    /// a round).
    #[arg(long, default_value_t = 500)]
    samples: usize,
    /// Tasks thinned out of the queue's front for the compaction phase
    /// (default: a tenth of --tasks; 0 skips the phase).
    #[arg(long)]
    compact: Option<u64>,
    /// Leave the tasks in place at the end instead of draining them.
    #[arg(long)]
    no_drain: bool,
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

/// Claims of 100 (each acked) timed side by side, one of each kind per
/// round, so the machine's noise (the disk's fsync latency above all)
/// falls on all three alike: from the full queue, from a small other queue
/// of the same store, and from an empty store of its own on the same disk.
struct Probes {
    empty: Engine,
    full: QueueName,
    other: QueueName,
}

/// p50 and p99 in µs.
type Quantiles = (u64, u64);

impl Probes {
    async fn measure(&self, engine: &Engine, rounds: usize) -> Result<[Quantiles; 3]> {
        let mut h = [
            Histogram::<u64>::new(3)?,
            Histogram::<u64>::new(3)?,
            Histogram::<u64>::new(3)?,
        ];
        for i in 0..rounds {
            h[0].record(claim_once(engine, &self.full, None).await?)?;
            h[1].record(claim_once(engine, &self.other, Some(i)).await?)?;
            h[2].record(claim_once(&self.empty, &self.other, Some(i)).await?)?;
        }
        Ok(h.map(|h| (h.value_at_quantile(0.5), h.value_at_quantile(0.99))))
    }
}

/// Claims 100 from `queue` (after enqueuing 100 there, with `refill`) and
/// acks them; µs of the claim alone.
async fn claim_once(engine: &Engine, queue: &QueueName, refill: Option<usize>) -> Result<u64> {
    if let Some(i) = refill {
        let tasks = (0..100)
            .map(|j| NewTask::new(payload(i as u64 * 100 + j)))
            .collect();
        engine.enqueue(queue, tasks).await?;
    }
    let start = Instant::now();
    let claimed = engine
        .claim(ClaimRequest::new(queue.clone(), "resident").max(100))
        .await?;
    let micros = start.elapsed().as_micros() as u64;
    let acks: Vec<(TaskId, LeaseToken)> = claimed
        .iter()
        .filter_map(|t| Some((t.id, t.lease.as_ref()?.token)))
        .collect();
    engine.ack_many(acks).await?;
    Ok(micros)
}

/// Single-task enqueues one after another (each waits for its group
/// commit) until `until` says stop; (count, p50, p99) µs.
async fn enqueue_latency(
    engine: &Engine,
    queue: &QueueName,
    mut until: impl FnMut() -> bool,
) -> Result<(u64, u64, u64)> {
    let mut h = Histogram::<u64>::new(3)?;
    let mut i = 0;
    while !until() {
        let start = Instant::now();
        engine
            .enqueue(queue, vec![NewTask::new(payload(i))])
            .await?;
        h.record(start.elapsed().as_micros() as u64)?;
        i += 1;
    }
    Ok((h.len(), h.value_at_quantile(0.5), h.value_at_quantile(0.99)))
}

/// A counter of the engine's, read from the process's metrics.
fn counter(metrics: &PrometheusHandle, name: &str) -> u64 {
    metrics
        .render()
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// Thins `n` tasks out of the front of `bulk` (nine in ten acked, one
/// failed for good), has a checkpoint queue their survivors for
/// compaction, and measures compaction and enqueues beside it.
async fn compaction_phase(
    engine: &Engine,
    bulk: &QueueName,
    probe: &QueueName,
    n: u64,
    dir: &Path,
    metrics: &PrometheusHandle,
) -> Result<()> {
    let t = Instant::now();
    let mut thinned = 0u64;
    while thinned < n {
        let claimed = engine
            .claim(ClaimRequest::new(bulk.clone(), "resident").max(1000))
            .await?;
        if claimed.is_empty() {
            break;
        }
        thinned += claimed.len() as u64;
        let mut acks = Vec::with_capacity(claimed.len());
        let mut fails = Vec::new();
        for (i, task) in claimed.iter().enumerate() {
            let Some(lease) = &task.lease else { continue };
            if i % 10 == 0 {
                let fail = FailRequest {
                    discard: true,
                    ..FailRequest::new("kept dead for the compaction benchmark")
                };
                // All at once, so they share group commits.
                fails.push(engine.fail(task.id, lease.token, fail));
            } else {
                acks.push((task.id, lease.token));
            }
        }
        for r in futures::future::join_all(fails).await {
            r?;
        }
        engine.ack_many(acks).await?;
    }
    println!(
        "thinned {thinned} tasks (a tenth kept, dead) in {:.1} s; disk {} MiB",
        t.elapsed().as_secs_f64(),
        dir_bytes(dir) >> 20
    );
    let quiet = Instant::now();
    let before = enqueue_latency(engine, probe, || quiet.elapsed().as_secs() >= 5).await?;
    let (moved0, bytes0) = (
        counter(metrics, "spool_compaction_moved_total"),
        counter(metrics, "spool_compaction_moved_bytes_total"),
    );
    // The checkpoint's walk queues the survivors; compaction runs once it
    // is published, and is over when the counter stops moving.
    let start = Instant::now();
    engine.checkpoint().await?;
    let mut last = (moved0, Instant::now());
    let mut end = start;
    let during = enqueue_latency(engine, probe, || {
        let moved = counter(metrics, "spool_compaction_moved_total");
        if moved != last.0 {
            last = (moved, Instant::now());
            end = last.1;
        }
        last.1.elapsed().as_secs() >= 2 || start.elapsed().as_secs() >= 600
    })
    .await?;
    let moved = counter(metrics, "spool_compaction_moved_total") - moved0;
    let bytes = counter(metrics, "spool_compaction_moved_bytes_total") - bytes0;
    let secs = end.duration_since(start).as_secs_f64().max(1e-3);
    println!(
        "compaction: moved {moved} payloads ({} MiB) in {secs:.1} s: {:.0} payloads/s, {:.1} MiB/s",
        bytes >> 20,
        moved as f64 / secs,
        bytes as f64 / secs / 1048576.0
    );
    println!(
        "single enqueues: p50/p99 {}/{} µs before ({} calls), {}/{} µs during compaction ({} calls)",
        before.1, before.2, before.0, during.1, during.2, during.0
    );
    engine.checkpoint().await?;
    println!(
        "after the next checkpoint: disk {} MiB",
        dir_bytes(dir) >> 20
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    allocator::return_freed_memory_at_once();
    let metrics = PrometheusBuilder::new().install_recorder()?;
    // The engine's own lines (checkpoints, recovery's progress) on stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
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
    let empty_dir = tempfile::tempdir_in(dir.parent().unwrap_or(&dir))?;
    let probes = Probes {
        empty: Engine::open(EngineConfig::new(empty_dir.path()))?,
        full: bulk.clone(),
        other: probe.clone(),
    };
    // Queues exist and the allocator is warm before the baseline.
    engine
        .enqueue(&probe, vec![NewTask::new(payload(0))])
        .await?;
    let [_, base, _] = probes.measure(&engine, a.samples).await?;
    let base_rss = rss();
    println!(
        "empty store: rss {} MiB, claim of 100 p50 {} µs p99 {} µs",
        base_rss >> 20,
        base.0,
        base.1
    );
    println!(
        "{:>12} {:>10} {:>9} {:>9} {:>20} {:>20} {:>20}",
        "tasks",
        "fill/s",
        "rss B/t",
        "disk B/t",
        "claim p50/p99 same q",
        "other q",
        "empty store beside"
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
            let [same, other, empty] = probes.measure(&engine, a.samples).await?;
            println!(
                "{done:>12} {rate:>10.0} {per_task:>9.1} {disk:>9.1} {:>11}/{:<8} {:>11}/{:<8} {:>11}/{:<8}",
                same.0, same.1, other.0, other.1, empty.0, empty.1
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
    let [same, other, empty] = probes.measure(&engine, a.samples).await?;
    println!(
        "after the restart: claim of 100 p50/p99 {}/{} µs from the full queue, {}/{} µs from \
         another, {}/{} µs from an empty store beside it",
        same.0, same.1, other.0, other.1, empty.0, empty.1
    );

    let compact = a.compact.unwrap_or(a.tasks / 10);
    if compact > 0 {
        compaction_phase(&engine, &bulk, &probe, compact, &dir, &metrics).await?;
    }
    if a.no_drain {
        return Ok(());
    }

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
