//! Kill -9 loop on a real child process.
//!
//! The child (this same test binary, re-executed with an environment
//! variable) enqueues, claims and acks as fast as it can on a small-segment,
//! frequently-checkpointing engine, printing a ledger line only after each
//! operation was acknowledged (and a line before each ack it attempts). The
//! parent SIGKILLs it at random moments, then reopens the data directory and
//! proves: every acknowledged enqueue is present unless an ack of it was
//! attempted, no acknowledged ack came back, and every task present still
//! carries its own payload, byte for byte. A fifth of the claimed tasks fail
//! for good and stay (dead tasks keep their payloads), so segments go mostly
//! dead and compaction moves the survivors' payloads while the kills land:
//! at the end the log holds little more than the live payloads.
//!
//! Alone in its test binary: the parent re-executes the binary as the
//! child, by exact test name, and the child must run that test and nothing
//! else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use rand::Rng;
use spool_core::{ClaimRequest, FailRequest, ListRequest, NewTask, Payload, QueueName, Store};
use spool_engine::{Engine, EngineConfig};

const CHILD_ENV: &str = "SPOOL_KILL9_CHILD_DIR";
const KILLS: usize = 24;

fn config(dir: &str) -> EngineConfig {
    let mut cfg = EngineConfig::new(dir);
    cfg.segment_size = 128 * 1024;
    cfg.checkpoint_bytes = 512 * 1024;
    cfg
}

/// The child's body; a no-op unless this binary was started as the child.
#[test]
fn kill9_child_process() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        let engine = Engine::open(config(&dir)).expect("child opens the engine");
        let queue = QueueName::new("ledger").unwrap();
        let mut out = std::io::stdout().lock();
        let mut rng = rand::thread_rng();
        // Payload tags unique across children: a random prefix and a count.
        let run: u32 = rng.gen();
        let mut count = 0u64;
        loop {
            let n = rng.gen_range(1..40);
            let tags: Vec<String> = (0..n)
                .map(|_| {
                    count += 1;
                    format!("{run:08x}.{count}")
                })
                .collect();
            let tasks = tags
                .iter()
                .map(|tag| NewTask::new(Payload::binary(payload_of(tag))))
                .collect();
            let ids = engine.enqueue(&queue, tasks).await.expect("enqueue");
            for (o, tag) in ids.iter().zip(&tags) {
                writeln!(out, "E {} {tag}", o.id.0).unwrap();
            }
            out.flush().unwrap();
            // Claims outpace enqueues, so the queue stays short and what
            // stays behind is the dead fifth: spread thin over the log.
            let claimed = engine
                .claim(ClaimRequest::new(queue.clone(), "child").max(rng.gen_range(1..80)))
                .await
                .expect("claim");
            let (acks, dead): (Vec<_>, Vec<_>) = claimed
                .iter()
                .map(|t| (t.id, t.lease.as_ref().unwrap().token))
                .partition(|_| rng.gen_bool(0.8));
            for (id, token) in dead {
                let fail = FailRequest {
                    discard: true,
                    ..FailRequest::new("stays behind")
                };
                engine.fail(id, token, fail).await.expect("fail");
            }
            // Announce the acks first: one killed in flight may or may not
            // have landed, and the checker must know it was attempted.
            for (id, _) in &acks {
                writeln!(out, "C {}", id.0).unwrap();
            }
            out.flush().unwrap();
            let results = engine.ack_many(acks.clone()).await.expect("ack");
            for ((id, _), r) in acks.iter().zip(results) {
                r.expect("ack of a fresh lease");
                writeln!(out, "A {}", id.0).unwrap();
            }
            out.flush().unwrap();
        }
    });
}

/// A task's payload: its tag, padded to 100 bytes.
fn payload_of(tag: &str) -> Vec<u8> {
    format!("{tag:<100}").into_bytes()
}

/// Every task present, with its payload.
async fn all_tasks(engine: &Engine) -> HashMap<u64, Vec<u8>> {
    let mut req = ListRequest::new(QueueName::new("ledger").unwrap());
    req.limit = 1000;
    let mut tasks = HashMap::new();
    loop {
        let page = engine.list(req.clone()).await.unwrap();
        tasks.extend(
            page.tasks
                .iter()
                .map(|t| (t.id.0, t.payload.bytes.to_vec())),
        );
        match page.next_cursor {
            Some(c) => req.cursor = Some(c),
            None => return tasks,
        }
    }
}

/// Bytes of the data directory's log segments.
fn log_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

#[test]
fn nothing_acknowledged_is_lost_across_kill9() {
    let dir = tempfile::tempdir().unwrap();
    let dir_s = dir.path().to_str().unwrap().to_string();
    // Every acknowledged enqueue, with its payload's tag.
    let mut enqueued: HashMap<u64, String> = HashMap::new();
    let mut acked: HashSet<u64> = HashSet::new();
    // Acks sent but not (yet) acknowledged: the task may be gone or not.
    let mut acking: HashSet<u64> = HashSet::new();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for round in 0..KILLS {
        let lines = support::run_child_until_killed("kill9_child_process", CHILD_ENV, &dir_s);
        // The test harness prints its own lines too; only ledger lines count.
        for (op, id, tag) in lines.iter().filter_map(|l| {
            let mut words = l.split(' ');
            let op = words.next()?;
            let id = words.next()?.parse::<u64>().ok()?;
            Some((op, id, words.next()))
        }) {
            match (op, tag) {
                ("E", Some(tag)) => assert!(
                    enqueued.insert(id, tag.to_string()).is_none(),
                    "id {id} handed out twice"
                ),
                ("C", None) => {
                    acking.insert(id);
                }
                ("A", None) => assert!(acked.insert(id), "id {id} acked twice"),
                _ => {}
            }
        }
        let present = rt.block_on(async {
            let engine = Engine::open(config(&dir_s)).expect("reopen after kill -9");
            all_tasks(&engine).await
        });
        for (id, tag) in &enqueued {
            if acked.contains(id) {
                assert!(
                    !present.contains_key(id),
                    "acked task {id} came back (round {round})"
                );
            } else if !acking.contains(id) {
                assert!(
                    present.contains_key(id),
                    "acknowledged enqueue {id} lost (round {round})"
                );
            }
            if let Some(payload) = present.get(id) {
                assert!(
                    *payload == payload_of(tag),
                    "task {id}'s payload changed (round {round})"
                );
            }
        }
        assert!(!lines.is_empty() || round > 0, "the child did no work");
    }
    // A checkpoint queues compaction of what is left, and a later one
    // reclaims the segments it emptied: a few at most.
    let (log, live) = rt.block_on(async {
        let engine = Engine::open(config(&dir_s)).unwrap();
        let live = all_tasks(&engine).await.len() as u64 * 100;
        let mut log = u64::MAX;
        for _ in 0..50 {
            engine.checkpoint().await.unwrap();
            log = log_bytes(dir.path());
            if log < 4 * live + 1024 * 1024 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (log, live)
    });
    eprintln!("log {log} bytes, live payloads {live} bytes");
    assert!(
        log < 4 * live + 1024 * 1024,
        "the log holds {log} bytes for {live} bytes of live payloads"
    );
    assert!(
        enqueued.len() > 1000,
        "too little work to prove anything: {}",
        enqueued.len()
    );
    assert!(!acked.is_empty());
}
