//! Workflows over the fault-injecting file system (docs/spec.md §3.2, §9):
//! parents, callbacks that wait for them with `if_parent_fails: run`,
//! strict followers a dead parent cancels, a batch with a callback, and
//! acks that carry results, through power loss torn every way `FaultyFs`
//! knows and through failed writes and `fdatasync`s. The engine has no
//! batch object: a batch with a callback is a task that waits for every
//! member with `run`, and reads the batch's counts from its dependencies.
//!
//! Invariants, checked after every crash:
//! - every acknowledged enqueue, claim, ack and discard survived, and no
//!   task acknowledged as completed comes back;
//! - a dependent agrees with its parents as they now stand: it waits for
//!   exactly those still live and not dead, counts the dead ones as failed
//!   and the gone ones as completed, holds the results of exactly the gone
//!   ones that were acked with one, and is pending exactly while it waits;
//!   a strict follower never outlives a dead parent;
//! - a parent's ending and what it does to its dependents are one change:
//!   a failed write of it leaves all of it or none;
//! - a dependent is released once: never handed out while a parent is
//!   live, never twice under one lease, and when it runs it reads every
//!   parent's ending and every result.
//!
//! The clock stands still while an engine runs, so no lease runs out by
//! accident and a task handed out twice in one round is a double release;
//! after each crash it moves past every lease, so what a crash left leased
//! comes back and every workflow can finish.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use spool_core::{
    Ack, ClaimRequest, Dependencies, FailRequest, LeaseToken, ListRequest, ManualClock, NewTask,
    Parent, ParentFailure, Payload, QueueName, Store, StoreError, Task, TaskId, TaskResult,
    TaskState, Timestamp,
};
use spool_engine::{Engine, EngineConfig};
use spool_wal::{CrashMode, FaultyFs, Fs};

pub(super) const START: Timestamp = Timestamp(1_700_000_000_000);
/// More than the queues' lease (the default, 30 s).
pub(super) const PAST_LEASES: Duration = Duration::from_secs(60);

/// Every way a power loss treats unsynced writes.
pub(super) const MODES: [CrashMode; 6] = [
    CrashMode::DropUnsynced,
    CrashMode::KeepUnsynced,
    CrashMode::KeepPrefix(700),
    CrashMode::RandomPrefix,
    CrashMode::RandomSectors,
    CrashMode::Random,
];

/// Small segments, so workflows straddle them and checkpoints reclaim
/// them; `checkpoint_bytes` decides whether checkpoints race the load.
pub(super) fn config(
    fs: &FaultyFs,
    clock: &Arc<ManualClock>,
    checkpoint_bytes: u64,
) -> EngineConfig {
    let mut cfg = EngineConfig::new("/data");
    cfg.fs = Arc::new(fs.clone());
    cfg.clock = clock.clone();
    cfg.segment_size = 32 * 1024;
    cfg.checkpoint_bytes = checkpoint_bytes;
    cfg
}

pub(super) fn queue(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

// A task's role is in its payload: a worker may claim a task before the
// worker that enqueued it has been told its id.
pub(super) const PARENT: u8 = b'P';
pub(super) const CALLBACK: u8 = b'C';
pub(super) const STRICT: u8 = b'S';

pub(super) fn task(role: u8) -> NewTask {
    NewTask::new(Payload::binary(vec![role; 150]))
}

pub(super) fn role(t: &Task) -> u8 {
    t.payload.bytes.first().copied().unwrap_or(0)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Fate {
    Dies,
    LeavesResult,
    Done,
}

/// How a parent ends whenever it is held, fixed by its id: a parent run
/// again after a crash ends the same way, so its state alone tells how it
/// ended (gone: completed; dead: failed) and whether it left a result.
pub(super) fn fate(id: u64) -> Fate {
    match id % 10 {
        0 | 1 => Fate::Dies,
        2..=4 => Fate::LeavesResult,
        _ => Fate::Done,
    }
}

pub(super) fn dies(id: u64) -> bool {
    fate(id) == Fate::Dies
}

pub(super) fn leaves_result(id: u64) -> bool {
    fate(id) == Fate::LeavesResult
}

pub(super) fn result_of(id: u64) -> TaskResult {
    TaskResult::from_json(&format!("{{\"parent\":{id}}}")).unwrap()
}

pub(super) fn discard() -> FailRequest {
    FailRequest {
        discard: true,
        ..FailRequest::new("broken for good")
    }
}

pub(super) fn token(t: &Task) -> LeaseToken {
    t.lease.as_ref().expect("a claimed task has a lease").token
}

pub(super) fn ids(tasks: &[Task]) -> Vec<TaskId> {
    tasks.iter().map(|t| t.id).collect()
}

/// Every task of `queues`, by id.
pub(super) async fn all_tasks(engine: &Engine, queues: &[QueueName]) -> HashMap<u64, Task> {
    let mut tasks = HashMap::new();
    for q in queues {
        let mut req = ListRequest::new(q.clone());
        req.limit = 1000;
        loop {
            let page = engine.list(req.clone()).await.unwrap();
            tasks.extend(page.tasks.into_iter().map(|t| (t.id.0, t)));
            match page.next_cursor {
                Some(c) => req.cursor = Some(c),
                None => break,
            }
        }
    }
    tasks
}

/// `t`, a task with dependencies, agrees with its parents as they stand in
/// `tasks`. No parent here is cancelled or retried, so gone means
/// completed, dead means failed, and anything else is still awaited;
/// `leaves_result` names the parents acked with a result.
pub(super) fn check_waits(
    t: &Task,
    tasks: &HashMap<u64, Task>,
    leaves_result: impl Fn(u64) -> bool,
    ctx: &str,
) {
    let (id, deps) = (t.id, deps_of(t, ctx));
    let dead = |p: &TaskId| tasks.get(&p.0).is_some_and(|p| p.state == TaskState::Dead);
    let mut live: Vec<TaskId> = deps
        .after
        .iter()
        .copied()
        .filter(|p| tasks.contains_key(&p.0) && !dead(p))
        .collect();
    live.sort_unstable();
    let failed = deps.after.iter().filter(|p| dead(p)).count() as u32;
    let mut results: Vec<(TaskId, TaskResult)> = deps
        .after
        .iter()
        .filter(|p| !tasks.contains_key(&p.0) && leaves_result(p.0))
        .map(|p| (*p, result_of(p.0)))
        .collect();
    results.sort_by_key(|(p, _)| *p);
    assert_eq!(deps.waiting_on, live, "{ctx}: task {id} waits for");
    assert_eq!(deps.failed, failed, "{ctx}: task {id}'s failed parents");
    assert_eq!(deps.results, results, "{ctx}: task {id}'s results");
    assert_eq!(
        t.state == TaskState::Pending,
        !live.is_empty(),
        "{ctx}: task {id} is {:?} waiting for {live:?}",
        t.state
    );
    assert_ne!(t.state, TaskState::Dead, "{ctx}: dependent {id} died");
    if deps.if_parent_fails == ParentFailure::Cancel {
        assert_eq!(failed, 0, "{ctx}: task {id} outlived a dead parent");
    }
}

/// A dependent's dependencies, which it never loses.
fn deps_of<'t>(t: &'t Task, ctx: &str) -> &'t Dependencies {
    t.deps
        .as_deref()
        .unwrap_or_else(|| panic!("{ctx}: task {} lost its dependencies", t.id))
}

/// A claimed dependent was released only once every parent had ended, and
/// reads how each did: `dies` and `leaves_result` say how each ends.
pub(super) fn check_released(
    t: &Task,
    dies: impl Fn(u64) -> bool,
    leaves_result: impl Fn(u64) -> bool,
    ctx: &str,
) {
    let (id, deps) = (t.id, deps_of(t, ctx));
    assert!(
        deps.waiting_on.is_empty(),
        "{ctx}: task {id} handed out while it waits for {:?}",
        deps.waiting_on
    );
    let failed = deps.after.iter().filter(|p| dies(p.0)).count() as u32;
    assert_eq!(deps.failed, failed, "{ctx}: task {id}'s failed parents");
    assert_eq!(
        deps.completed(),
        deps.after.len() as u32 - failed,
        "{ctx}: task {id}'s completed parents"
    );
    let mut results: Vec<(TaskId, TaskResult)> = deps
        .after
        .iter()
        .filter(|p| leaves_result(p.0))
        .map(|p| (*p, result_of(p.0)))
        .collect();
    results.sort_by_key(|(p, _)| *p);
    assert_eq!(deps.results, results, "{ctx}: task {id}'s results");
}

/// An answer after a crash: `unavailable`, or, from a call that answers
/// tasks (claim, fail), `internal` when reading a payload back met a
/// handle the crash killed. The simulated power loss leaves the process
/// running, so a change can be durable and its answer still fail; either
/// way the caller does not know, and the ledger counts it as tried.
pub(super) fn refused(e: &StoreError, what: &str) -> bool {
    let dead_handle = e.code() == "internal" && e.to_string().contains("simulated crash");
    assert!(e.code() == "unavailable" || dead_handle, "{what}: {e}");
    false
}

mod batch;
mod failed_write;
mod power_loss;
