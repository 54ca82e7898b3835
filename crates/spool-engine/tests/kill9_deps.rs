//! Kill -9 loop on a real child process running workflows.
//!
//! The child (this same test binary, re-executed with an environment
//! variable) enqueues batches of a few parents and one callback that waits
//! for them all (`if_parent_fails: run`), claims as fast as it can, fails
//! a fifth of the parents for good and acks the rest (half of them with a
//! result) and every callback, on a small-segment, frequently-checkpointing
//! engine. It prints a ledger line only after each enqueue was
//! acknowledged, and one before each callback ack and each ack with a
//! result it attempts. The parent SIGKILLs it at random moments, reopens
//! the data directory and proves that every callback's dependencies agree
//! with its parents as they now stand: it waits for exactly the parents
//! still live and not dead, counts the dead ones as failed and the gone
//! ones as completed, holds the result of exactly the gone ones acked with
//! one, is pending exactly while it waits, and is present unless an ack of
//! it was attempted. A parent's ending and what it did to its callback are
//! one record, so no kill can leave one without the other.
//!
//! Alone in its test binary: the parent re-executes the binary as the
//! child, by exact test name.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{HashMap, HashSet};
use std::io::Write;

use rand::Rng;
use spool_core::{
    Ack, ClaimRequest, FailRequest, ListRequest, NewTask, Parent, ParentFailure, Payload,
    QueueName, Store, Task, TaskId, TaskResult, TaskState,
};
use spool_engine::{Engine, EngineConfig};

const CHILD_ENV: &str = "SPOOL_KILL9_DEPS_CHILD_DIR";
const KILLS: usize = 16;
const CALLBACK: &[u8] = b"callback";

fn config(dir: &str) -> EngineConfig {
    let mut cfg = EngineConfig::new(dir);
    cfg.segment_size = 128 * 1024;
    cfg.checkpoint_bytes = 256 * 1024;
    cfg
}

fn queue() -> QueueName {
    QueueName::new("flow").unwrap()
}

/// The child's body; a no-op unless this binary was started as the child.
#[test]
fn kill9_deps_child_process() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        let engine = Engine::open(config(&dir)).expect("child opens the engine");
        let mut out = std::io::stdout().lock();
        let mut rng = rand::thread_rng();
        loop {
            let parents = rng.gen_range(1..8u32);
            let mut batch: Vec<NewTask> = (0..parents)
                .map(|_| NewTask::new(Payload::binary(vec![b'p'; 50])))
                .collect();
            let callback = (0..parents)
                .fold(NewTask::new(Payload::binary(CALLBACK)), |t, i| {
                    t.after(Parent::InBatch(i))
                })
                .if_parent_fails(ParentFailure::Run);
            batch.push(callback);
            let ids = engine.enqueue(&queue(), batch).await.expect("enqueue");
            let line: Vec<String> = ids.iter().map(|o| o.id.0.to_string()).collect();
            writeln!(out, "W {}", line.join(" ")).unwrap();
            out.flush().unwrap();

            let claimed = engine
                .claim(ClaimRequest::new(queue(), "child").max(rng.gen_range(1..20)))
                .await
                .expect("claim");
            let mut acks = Vec::new();
            let mut with_result = Vec::new();
            for t in &claimed {
                let token = t.lease.as_ref().unwrap().token;
                if t.payload.bytes.as_ref() == CALLBACK {
                    writeln!(out, "C {}", t.id.0).unwrap();
                    acks.push((t.id, token));
                } else if rng.gen_bool(0.4) {
                    writeln!(out, "R {}", t.id.0).unwrap();
                    with_result.push((t.id, token));
                } else if rng.gen_bool(0.2) {
                    let fail = FailRequest {
                        discard: true,
                        ..FailRequest::new("broken")
                    };
                    engine.fail(t.id, token, fail).await.expect("fail");
                } else {
                    acks.push((t.id, token));
                }
            }
            out.flush().unwrap();
            for (id, token) in with_result {
                let result = Ack::Result(result_of(id.0));
                engine
                    .ack(id, token, result)
                    .await
                    .expect("ack with a result");
            }
            for r in engine.ack_many(acks).await.expect("ack") {
                r.expect("ack of a fresh lease");
            }
        }
    });
}

/// The result the child leaves on parent `id`.
fn result_of(id: u64) -> TaskResult {
    TaskResult::from_json(&format!("{{\"parent\":{id}}}")).unwrap()
}

/// Every task present, by id.
async fn all_tasks(engine: &Engine) -> HashMap<u64, Task> {
    let mut req = ListRequest::new(queue());
    req.limit = 1000;
    let mut tasks = HashMap::new();
    loop {
        let page = engine.list(req.clone()).await.unwrap();
        tasks.extend(page.tasks.into_iter().map(|t| (t.id.0, t)));
        match page.next_cursor {
            Some(c) => req.cursor = Some(c),
            None => return tasks,
        }
    }
}

/// The callback `cb`, present in `tasks`, agrees with its `parents` as
/// they stand in `tasks`; `with_result` holds the parents an ack with a
/// result was attempted for.
fn check_callback(
    cb: &Task,
    parents: &[u64],
    tasks: &HashMap<u64, Task>,
    with_result: &HashSet<u64>,
    round: usize,
) {
    let id = cb.id;
    let deps = cb.deps.as_deref().expect("a callback has dependencies");
    let named: Vec<TaskId> = parents.iter().map(|&p| TaskId(p)).collect();
    assert_eq!(deps.after, named, "callback {id}'s parents (round {round})");
    let live: Vec<TaskId> = named
        .iter()
        .copied()
        .filter(|p| tasks.get(&p.0).is_some_and(|t| t.state != TaskState::Dead))
        .collect();
    let dead = named
        .iter()
        .filter(|p| tasks.get(&p.0).is_some_and(|t| t.state == TaskState::Dead))
        .count() as u32;
    assert_eq!(deps.waiting_on, live, "callback {id} waits (round {round})");
    assert_eq!(deps.failed, dead, "callback {id}'s failed (round {round})");
    let mut results: Vec<(TaskId, TaskResult)> = named
        .iter()
        .filter(|p| !tasks.contains_key(&p.0) && with_result.contains(&p.0))
        .map(|p| (*p, result_of(p.0)))
        .collect();
    results.sort_by_key(|(p, _)| *p);
    assert_eq!(
        deps.results, results,
        "callback {id}'s results (round {round})"
    );
    assert_eq!(
        cb.state == TaskState::Pending,
        !live.is_empty(),
        "callback {id} is {:?} waiting on {live:?} (round {round})",
        cb.state
    );
}

#[test]
fn workflows_stay_consistent_across_kill9() {
    let dir = tempfile::tempdir().unwrap();
    let dir_s = dir.path().to_str().unwrap().to_string();
    // Each acknowledged callback, with its parents in order.
    let mut callbacks: HashMap<u64, Vec<u64>> = HashMap::new();
    // Callbacks whose ack was attempted: gone or not.
    let mut acking: HashSet<u64> = HashSet::new();
    // Parents whose ack with a result was attempted.
    let mut with_result: HashSet<u64> = HashSet::new();
    let mut released = 0usize;
    let rt = tokio::runtime::Runtime::new().unwrap();
    for round in 0..KILLS {
        let lines = support::run_child_until_killed("kill9_deps_child_process", CHILD_ENV, &dir_s);
        for line in lines {
            let mut words = line.split(' ');
            let op = words.next();
            let ids: Option<Vec<u64>> = words.map(|w| w.parse().ok()).collect();
            match (op, ids) {
                (Some("W"), Some(mut ids)) if ids.len() >= 2 => {
                    let cb = ids.pop().unwrap();
                    assert!(callbacks.insert(cb, ids).is_none(), "id {cb} twice");
                }
                (Some("C"), Some(ids)) if ids.len() == 1 => {
                    acking.insert(ids[0]);
                }
                (Some("R"), Some(ids)) if ids.len() == 1 => {
                    with_result.insert(ids[0]);
                }
                _ => {}
            }
        }
        let tasks = rt.block_on(async {
            let engine = Engine::open(config(&dir_s)).expect("reopen after kill -9");
            all_tasks(&engine).await
        });
        for (cb, parents) in &callbacks {
            match tasks.get(cb) {
                Some(t) => check_callback(t, parents, &tasks, &with_result, round),
                None => assert!(
                    acking.contains(cb),
                    "callback {cb} lost without an ack (round {round})"
                ),
            }
        }
        released = acking.len();
    }
    assert!(
        callbacks.len() > 200,
        "too little work to prove anything: {} workflows",
        callbacks.len()
    );
    assert!(released > 50, "only {released} callbacks ran");
}
