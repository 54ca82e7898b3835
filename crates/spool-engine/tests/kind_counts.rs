//! Per-queue counts by kind take memory for the kinds each queue has, not
//! for every kind the store knows: thousands of queues beside thousands of
//! kinds must not cost queues × kinds counters (32 bytes each), which
//! `stats()` would also walk on the core thread at every admin refresh.
//!
//! Alone in its test binary: it measures the process's resident memory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use spool_core::{Kind, NewTask, Payload, QueueName, Store};
use spool_engine::{Engine, EngineConfig};

const KINDS: usize = 3000;
const QUEUES: usize = 3000;

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_queues_beside_many_kinds_cost_memory_per_kind_held() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(EngineConfig::new(dir.path())).unwrap());
    let kind = |i: usize| Kind::new(format!("kind-{i}")).unwrap();
    let wide = QueueName::new("wide").unwrap();
    let every_kind = (0..KINDS)
        .map(|i| NewTask::new(Payload::binary(vec![1])).kind(kind(i)))
        .collect();
    engine.enqueue(&wide, every_kind).await.unwrap();
    let before = rss();
    // Each queue holds one task, of the last kind the store interned.
    let last = kind(KINDS - 1);
    let puts: Vec<_> = (0..QUEUES)
        .map(|i| {
            let (engine, last) = (engine.clone(), last.clone());
            tokio::spawn(async move {
                let q = QueueName::new(format!("q{i}")).unwrap();
                let task = NewTask::new(Payload::binary(vec![1])).kind(last);
                engine.enqueue(&q, vec![task]).await.unwrap();
            })
        })
        .collect();
    for p in puts {
        p.await.unwrap();
    }
    let stats = engine.stats().await.unwrap();
    let grown = rss().saturating_sub(before);
    assert_eq!(stats.len(), QUEUES + 1);
    assert!(stats
        .iter()
        .filter(|s| s.name != wide)
        .all(|s| s.kinds.len() == 1));
    // A counter for every kind in every queue would be 3000 × 3000 × 32 B,
    // 288 MB; a queue's own state is a few KB.
    let most = 64 * 1024 * 1024;
    assert!(
        grown < most,
        "{QUEUES} queues of one task each grew the process by {} MB",
        grown / (1024 * 1024)
    );
}
