//! What a waiting task costs in memory: a million tasks with 100-byte
//! payloads resident, measured as RSS growth (allocator included), and
//! that memory given back once they are done. Alone in its binary, so no
//! other test's allocations blur the figure, and so the global allocator
//! and its settings are the `spool` binary's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use spool_core::{ClaimRequest, NewTask, Payload, QueueName, Store};
use spool_engine::{Engine, EngineConfig};

/// The allocator `spool serve` runs with, set up as it sets it up.
#[path = "../src/allocator.rs"]
mod allocator;

const TASKS: u64 = 1_000_000;
/// The bound asserted here, above the ~56 B of the record and ready index:
/// room for allocator and buffer overheads that a million tasks do not yet
/// amortise (docs/BENCHMARKS.md has the figure at 100M).
const MAX_BYTES_PER_TASK: f64 = 96.0;

fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 4096
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_waiting_tasks_fit_the_memory_bound_and_give_it_back() {
    allocator::return_freed_memory_at_once();
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(dir.path())).unwrap();
    let q = QueueName::new("resident").unwrap();
    let payload = Payload::json(format!("{{\"pad\":\"{}\"}}", "x".repeat(90)).into_bytes());
    assert_eq!(payload.bytes.len(), 100);
    // Warm up (queue, buffers, threads) before the baseline.
    let warm = (0..1000).map(|_| NewTask::new(payload.clone())).collect();
    engine.enqueue(&q, warm).await.unwrap();
    drain(&engine, &q).await;
    let empty = rss();

    for _ in 0..TASKS / 1000 {
        let batch = (0..1000).map(|_| NewTask::new(payload.clone())).collect();
        engine.enqueue(&q, batch).await.unwrap();
    }
    let full = rss();
    let per_task = full.saturating_sub(empty) as f64 / TASKS as f64;
    assert!(
        per_task <= MAX_BYTES_PER_TASK,
        "{per_task:.1} bytes of RSS per resident task (bound {MAX_BYTES_PER_TASK})"
    );

    assert_eq!(drain(&engine, &q).await, TASKS);
    let after = rss();
    let kept = after.saturating_sub(empty);
    assert!(
        kept * 4 < full - empty && after < 2 * empty,
        "after the drain RSS is {} MiB: {} MiB above the empty store's, of {} MiB at the peak",
        after >> 20,
        kept >> 20,
        (full - empty) >> 20
    );
}

async fn drain(engine: &Engine, q: &QueueName) -> u64 {
    let mut n = 0;
    loop {
        let claimed = engine
            .claim(ClaimRequest::new(q.clone(), "w").max(1000))
            .await
            .unwrap();
        if claimed.is_empty() {
            return n;
        }
        n += claimed.len() as u64;
        let acks = claimed
            .iter()
            .map(|t| (t.id, t.lease.as_ref().unwrap().token))
            .collect();
        engine.ack_many(acks).await.unwrap();
    }
}
