//! Kill -9 loop on a real child process.
//!
//! The child (this same test binary, re-executed with an environment
//! variable) enqueues, claims and acks as fast as it can on a small-segment,
//! frequently-checkpointing engine, printing a ledger line only after each
//! operation was acknowledged (and a line before each ack it attempts). The
//! parent SIGKILLs it at random moments, then reopens the data directory and
//! proves: every acknowledged enqueue is present unless an ack of it was
//! attempted, and no acknowledged ack came back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::Rng;
use spool_core::{ClaimRequest, ListRequest, NewTask, Payload, QueueName, Store};
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
        loop {
            let n = rng.gen_range(1..40);
            let tasks = (0..n)
                .map(|_| NewTask::new(Payload::binary(vec![7u8; 100])))
                .collect();
            let ids = engine.enqueue(&queue, tasks).await.expect("enqueue");
            for o in ids {
                writeln!(out, "E {}", o.id.0).unwrap();
            }
            out.flush().unwrap();
            let claimed = engine
                .claim(ClaimRequest::new(queue.clone(), "child").max(rng.gen_range(1..50)))
                .await
                .expect("claim");
            let acks = claimed
                .iter()
                .filter(|_| rng.gen_bool(0.8))
                .map(|t| (t.id, t.lease.as_ref().unwrap().token))
                .collect::<Vec<_>>();
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

async fn all_ids(engine: &Engine) -> HashSet<u64> {
    let mut req = ListRequest::new(QueueName::new("ledger").unwrap());
    req.limit = 1000;
    let mut ids = HashSet::new();
    loop {
        let page = engine.list(req.clone()).await.unwrap();
        ids.extend(page.tasks.iter().map(|t| t.id.0));
        match page.next_cursor {
            Some(c) => req.cursor = Some(c),
            None => return ids,
        }
    }
}

#[test]
fn nothing_acknowledged_is_lost_across_kill9() {
    let dir = tempfile::tempdir().unwrap();
    let dir_s = dir.path().to_str().unwrap().to_string();
    let exe = std::env::current_exe().unwrap();
    let mut enqueued: HashSet<u64> = HashSet::new();
    let mut acked: HashSet<u64> = HashSet::new();
    // Acks sent but not (yet) acknowledged: the task may be gone or not.
    let mut acking: HashSet<u64> = HashSet::new();
    let mut rng = rand::thread_rng();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for round in 0..KILLS {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "kill9_child_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &dir_s)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            let mut r = BufReader::new(stdout);
            let mut line = String::new();
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                // A line cut by the kill has no newline: it was never complete.
                if line.ends_with('\n') {
                    lines.push(line.trim_end().to_string());
                }
                line.clear();
            }
            lines
        });
        std::thread::sleep(Duration::from_millis(rng.gen_range(150..600)));
        child.kill().unwrap();
        child.wait().unwrap();
        let lines = reader.join().unwrap();
        // The test harness prints its own lines too; only ledger lines count.
        for (op, id) in lines
            .iter()
            .filter_map(|l| l.split_once(' '))
            .filter_map(|(op, id)| Some((op, id.parse::<u64>().ok()?)))
        {
            match op {
                "E" => assert!(enqueued.insert(id), "id {id} handed out twice"),
                "C" => {
                    acking.insert(id);
                }
                "A" => assert!(acked.insert(id), "id {id} acked twice"),
                _ => {}
            }
        }
        let present = rt.block_on(async {
            let engine = Engine::open(config(&dir_s)).expect("reopen after kill -9");
            all_ids(&engine).await
        });
        for id in &enqueued {
            if acked.contains(id) {
                assert!(
                    !present.contains(id),
                    "acked task {id} came back (round {round})"
                );
            } else if !acking.contains(id) {
                assert!(
                    present.contains(id),
                    "acknowledged enqueue {id} lost (round {round})"
                );
            }
        }
        assert!(!lines.is_empty() || round > 0, "the child did no work");
    }
    assert!(
        enqueued.len() > 1000,
        "too little work to prove anything: {}",
        enqueued.len()
    );
    assert!(!acked.is_empty());
}
