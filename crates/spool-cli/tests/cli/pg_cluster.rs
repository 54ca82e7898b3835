//! Three `spool serve --postgres` nodes on one database schema, with
//! consumers on all three, and one node SIGKILLed mid-run (docs/spec.md §10):
//! - nothing acknowledged is lost: every task a node answered 201 for is
//!   completed, and the queue ends empty with nothing dead. A consumer of
//!   the doomed node may have its ack committed and never hear the answer
//!   (docs/spec.md §3's lost ack): such tasks count as completed once a live node
//!   says they are gone; if the ack did not commit, they come back after
//!   their lease like any stranded task;
//! - tasks leased through the dead node come back when their lease runs
//!   out (not before) and are completed by consumers of the other nodes;
//! - a schedule every node fires keeps firing once per tick, before and
//!   after the kill: consecutive ticks, none missing, none twice;
//! - a dependency crosses nodes and the kill: a parent enqueued through the
//!   doomed node and a child enqueued through another; after the kill the
//!   parent is acked with a result through a third node, and a claim long
//!   polling for the child on the second node gets it, once, with the
//!   result (docs/spec.md §3.2).
//!
//! Needs PostgreSQL at `DATABASE_URL` (default: the local server); each
//! run uses a schema of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{pg, TestResult};
use spool_client::RemoteStore;
use spool_core::{
    Ack, Cadence, ClaimRequest, Kind, NewTask, Parent, Payload, QueueName, ScheduleSpec, Store,
    StoreError, Task, TaskId, TaskKey, TaskRef, TaskResult, TaskState,
};
use tokio::task::JoinHandle;

/// Tasks the producer enqueues, in batches of `BATCH`.
const TASKS: usize = 3_000;
const BATCH: usize = 50;
/// Lease of every claim: how long the dead node's tasks stay leased.
const LEASE: Duration = Duration::from_secs(3);
/// Tasks a consumer of the doomed node holds, unacked, when it dies.
const STRANDED: u32 = 20;
const TICK: Duration = Duration::from_secs(1);

/// What consumers saw: for each task key, the attempts it was claimed at.
#[derive(Default)]
struct Seen {
    claims: HashMap<String, Vec<(u32, Instant)>>,
    completed: HashSet<String>,
    /// Keys of batches whose ack call failed: done or not, unknown.
    in_doubt: HashSet<String>,
}

/// Claims, records and acks until aborted; a failing node ends this
/// consumer (its node is the one that died).
async fn consume(
    store: Arc<RemoteStore>,
    queue: QueueName,
    worker: String,
    seen: Arc<Mutex<Seen>>,
) {
    loop {
        let req = ClaimRequest::new(queue.clone(), worker.clone())
            .max(25)
            .lease(LEASE)
            .wait(Duration::from_millis(200));
        let Ok(tasks) = store.claim(req).await else {
            return;
        };
        let now = Instant::now();
        let mut acks = Vec::new();
        {
            let mut seen = seen.lock().unwrap();
            for t in &tasks {
                let key = t
                    .key
                    .as_ref()
                    .map(|k| k.as_str().to_string())
                    .unwrap_or_default();
                seen.claims.entry(key).or_default().push((t.attempt, now));
                acks.push((t.id, t.lease.as_ref().unwrap().token));
            }
        }
        if acks.is_empty() {
            continue;
        }
        let Ok(results) = store.ack_many(acks).await else {
            let mut seen = seen.lock().unwrap();
            seen.in_doubt.extend(
                tasks
                    .iter()
                    .filter_map(|t| t.key.as_ref())
                    .map(|k| k.as_str().to_string()),
            );
            return;
        };
        let mut seen = seen.lock().unwrap();
        for (t, r) in tasks.iter().zip(results) {
            if r.is_ok() {
                let key = t
                    .key
                    .as_ref()
                    .map(|k| k.as_str().to_string())
                    .unwrap_or_default();
                seen.completed.insert(key);
            }
        }
    }
}

/// Whether none of the tasks with these keys exists any more (keys `h-*`
/// are in `held`, the others in `work`).
async fn all_gone(
    store: &RemoteStore,
    keys: &[String],
    work: &QueueName,
    held: &QueueName,
) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
    for key in keys {
        let queue = if key.starts_with("h-") { held } else { work };
        match store
            .get(TaskRef::Key(queue.clone(), TaskKey::new(key.clone())?))
            .await
        {
            Err(StoreError::NotFound) => {}
            Ok(_) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// A parent and its child, enqueued through different nodes, and a claim
/// for the child long polling on a third.
struct Workflow {
    parents: QueueName,
    parent: TaskId,
    child: TaskId,
    waiter: JoinHandle<Result<Vec<Task>, StoreError>>,
}

/// Enqueues the parent through node 2 (doomed) and the child through node
/// 0, and starts node 1's claims for the child: one long poll after
/// another until it gets it.
async fn start_workflow(stores: &[Arc<RemoteStore>]) -> Result<Workflow, StoreError> {
    let parents = QueueName::new("flow-parents")?;
    let children = QueueName::new("flow-children")?;
    let parent = stores[2]
        .enqueue(&parents, vec![NewTask::new(Payload::json("{}"))])
        .await?[0]
        .id;
    let child = stores[0]
        .enqueue(
            &children,
            vec![NewTask::new(Payload::json("{}")).after(Parent::Task(parent))],
        )
        .await?[0]
        .id;
    let claimer = stores[1].clone();
    let waiter = tokio::spawn(async move {
        loop {
            let req = ClaimRequest::new(children.clone(), "flow").wait(Duration::from_secs(5));
            let got = claimer.claim(req).await?;
            if !got.is_empty() {
                return Ok(got);
            }
        }
    });
    Ok(Workflow {
        parents,
        parent,
        child,
        waiter,
    })
}

/// With node 2 dead: the child is still pending; node 0 acks the parent
/// with a result, and node 1's claim gets the child with it.
async fn finish_workflow(stores: &[Arc<RemoteStore>], flow: Workflow) -> TestResult {
    let child = stores[0].get(TaskRef::Id(flow.child)).await?;
    assert_eq!(child.state, TaskState::Pending, "the child waits");
    let parent = stores[0]
        .claim(ClaimRequest::new(flow.parents, "flow").max(1))
        .await?;
    assert_eq!(parent.len(), 1, "the parent enqueued through the dead node");
    let token = parent[0].lease.as_ref().expect("a lease").token;
    let result = TaskResult::new(&serde_json::json!({"rows": 42, "by": "node 0"}))?;
    stores[0]
        .ack(flow.parent, token, Ack::Result(result.clone()))
        .await?;
    let got = tokio::time::timeout(Duration::from_secs(10), flow.waiter).await???;
    assert_eq!(
        got.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![flow.child]
    );
    let deps = got[0].deps.as_ref().expect("the child's dependencies");
    assert_eq!(deps.results, vec![(flow.parent, result)]);
    assert_eq!((deps.completed(), deps.failed), (1, 0));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_survive_a_sigkill() -> TestResult {
    let admin = pg::admin().await?;
    let schema = pg::fresh_schema("spool_cluster");
    let result = run_cluster(&schema).await;
    pg::drop_schema(&admin, &schema, result).await
}

async fn run_cluster(schema: &str) -> TestResult {
    let owned = schema.to_string();
    let mut nodes = tokio::task::spawn_blocking(move || pg::start_nodes(&owned, 3)).await??;
    let stores: Vec<Arc<RemoteStore>> = nodes
        .iter()
        .map(|n| RemoteStore::new(n.base.clone(), None).map(Arc::new))
        .collect::<Result<_, _>>()?;
    let work = QueueName::new("work")?;
    let ticks = QueueName::new("ticks")?;
    // Only the doomed node's worker claims from here until it dies, so it
    // surely holds these tasks when it does.
    let held = QueueName::new("held")?;

    // Every node runs a scheduler; the schedule is stored once.
    stores[0]
        .put_schedule(ScheduleSpec {
            name: Kind::new("heartbeat")?,
            queue: ticks.clone(),
            kind: None,
            payload: Payload::json("{}"),
            cadence: Cadence::Every(TICK),
            deadline: None,
        })
        .await?;

    let flow = start_workflow(&stores).await?;

    let seen = Arc::new(Mutex::new(Seen::default()));
    let tick_keys = Arc::new(Mutex::new(Seen::default()));
    let mut consumers = tokio::task::JoinSet::new();
    for (n, store) in stores.iter().enumerate() {
        for c in 0..2 {
            consumers.spawn(consume(
                store.clone(),
                work.clone(),
                format!("n{n}-c{c}"),
                seen.clone(),
            ));
        }
    }
    consumers.spawn(consume(
        stores[1].clone(),
        ticks.clone(),
        "ticks".into(),
        tick_keys.clone(),
    ));

    // Produce through all three nodes; the doomed node (index 2) takes part
    // until it dies. Every acknowledged key goes in the ledger.
    let mut ledger = HashSet::new();
    let stranded_tasks = (0..STRANDED)
        .map(|i| NewTask::new(Payload::json("{}")).key(TaskKey::new(format!("h-{i}")).unwrap()))
        .collect();
    stores[2].enqueue(&held, stranded_tasks).await?;
    ledger.extend((0..STRANDED).map(|i| format!("h-{i}")));
    let mut stranded = Vec::new();
    let started = Instant::now();
    for (b, chunk) in (0..TASKS).collect::<Vec<_>>().chunks(BATCH).enumerate() {
        let alive = if stranded.is_empty() { 3 } else { 2 };
        let store = &stores[b % alive];
        let tasks = chunk
            .iter()
            .map(|i| {
                NewTask::new(Payload::json(format!("{{\"i\":{i}}}")))
                    .key(TaskKey::new(format!("t-{i}")).unwrap())
            })
            .collect();
        store.enqueue(&work, tasks).await?;
        ledger.extend(chunk.iter().map(|i| format!("t-{i}")));
        if b == TASKS / BATCH / 2 {
            // Mid-run: a worker of node 2 holds tasks it will never finish,
            // then node 2 dies.
            // The lease starts within the claim: measure from before it.
            let at = Instant::now();
            let doomed = stores[2]
                .claim(
                    ClaimRequest::new(held.clone(), "doomed")
                        .max(STRANDED)
                        .lease(LEASE),
                )
                .await?;
            nodes[2].kill();
            stranded = doomed
                .into_iter()
                .map(|t| (t.key.unwrap().as_str().to_string(), at))
                .collect();
            assert_eq!(
                stranded.len(),
                STRANDED as usize,
                "the doomed worker's claim"
            );
            // A worker of a live node waits for them to come back.
            consumers.spawn(consume(
                stores[0].clone(),
                held.clone(),
                "rescuer".into(),
                seen.clone(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Everything acknowledged gets completed, the stranded tasks included.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (pending, in_doubt) = {
            let seen = seen.lock().unwrap();
            let pending: Vec<String> = ledger
                .iter()
                .filter(|k| !seen.completed.contains(*k))
                .cloned()
                .collect();
            let in_doubt = pending.iter().all(|k| seen.in_doubt.contains(k));
            (pending, in_doubt)
        };
        if pending.is_empty() || (in_doubt && all_gone(&stores[0], &pending, &work, &held).await?) {
            if !pending.is_empty() {
                eprintln!(
                    "{} tasks were completed by acks whose answers the kill cut off",
                    pending.len()
                );
            }
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {} tasks completed in time",
            ledger.len() - pending.len(),
            ledger.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    finish_workflow(&stores, flow).await?;

    // Let the schedule run long enough after the kill to show it goes on.
    let min_run = Duration::from_secs(10);
    if started.elapsed() < min_run {
        tokio::time::sleep(min_run - started.elapsed()).await;
    }
    consumers.abort_all();
    while consumers.join_next().await.is_some() {}

    // The stranded tasks came back only after their lease, as attempt 2.
    {
        let seen = seen.lock().unwrap();
        for (key, claimed_from) in &stranded {
            let again = seen.claims[key].iter().find(|(attempt, _)| *attempt >= 2);
            let (_, at) = again.unwrap_or_else(|| panic!("{key} was never claimed again"));
            // Slack for the database's clock against ours.
            assert!(
                *at >= *claimed_from + LEASE - Duration::from_millis(50),
                "{key} came back {:?} after it was claimed, before its lease ran out",
                at.duration_since(*claimed_from)
            );
        }
    }

    // Nothing left behind, nothing dead.
    let stats = stores[0].stats().await?;
    for queue in [&work, &held] {
        let q = stats
            .iter()
            .find(|s| s.name == *queue)
            .expect("queue stats");
        assert_eq!(q.counts.total(), 0, "tasks left in {queue}: {q:?}");
    }

    // One task per tick, consecutive, across the kill.
    let ticks_seen: BTreeMap<u64, usize> = tick_keys
        .lock()
        .unwrap()
        .claims
        .iter()
        .map(|(key, claims)| {
            let ms = key
                .rsplit(':')
                .next()
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("bad tick key {key}"));
            (
                ms,
                claims.iter().filter(|(attempt, _)| *attempt == 1).count(),
            )
        })
        .collect();
    let ms: Vec<u64> = ticks_seen.keys().copied().collect();
    assert!(ms.len() >= 7, "too few ticks fired: {ms:?}");
    for pair in ms.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            TICK.as_millis() as u64,
            "a tick was skipped: {ms:?}"
        );
    }
    assert!(
        ticks_seen.values().all(|&n| n == 1),
        "a tick ran twice: {ticks_seen:?}"
    );
    Ok(())
}
