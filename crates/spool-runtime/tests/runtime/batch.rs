//! `Client::batch` (docs/spec.md §3.2, §6): members and their callback,
//! or a workflow, enqueued in one atomic call by position; the callback
//! runs once, after every member ended, however they ended, and reads
//! their results; a batch that names a position not before a task's own,
//! or another queue, is refused whole and enqueues nothing. On the
//! embedded engine, and through a server over HTTP and over RESP.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use spool_client::RespStore;
use spool_core::{ParentFailure, Store, StoreError, TaskId, TaskState};
use spool_runtime::{Client, Context, EnqueueError, EnqueueOptions, Job, TaskError, Worker};
use spool_server::RespLimits;

use crate::support::{eventually, remaining, remote, Embedded, Server};
use crate::workflow_jobs::{Callback, Member};

/// A job of another queue.
#[derive(Serialize, Deserialize)]
struct Elsewhere;

impl Job for Elsewhere {
    const KIND: &'static str = "elsewhere";
}

/// What the handlers saw, in the order they ran.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    /// A member ran (before its outcome was reported).
    Member(u32),
    /// The callback ran: (completed, failed, still waited on), the
    /// members it names in `after`, and their results in that order.
    Callback((u32, u32, usize), Vec<TaskId>, Vec<u32>),
}

fn worker(store: Arc<dyn Store>, seen: &Arc<Mutex<Vec<Seen>>>) -> Worker {
    let (on_member, on_callback) = (seen.clone(), seen.clone());
    Worker::builder(store)
        .register(move |ctx: Context, m: Member| {
            let seen = on_member.clone();
            async move {
                // A member that fails leaves a result too: it must not count.
                ctx.set_result(&m.n).unwrap();
                seen.lock().unwrap().push(Seen::Member(m.n));
                match m.ok {
                    true => Ok(()),
                    false => Err(TaskError::permanent("this member fails")),
                }
            }
        })
        .register(move |ctx: Context, _: Callback| {
            let seen = on_callback.clone();
            async move {
                let d = ctx.deps().expect("a callback has dependencies");
                // The handler needs nothing but its context: its `after`
                // names the members.
                let results = d
                    .after
                    .iter()
                    .filter_map(|id| ctx.parent_result::<u32>(*id))
                    .map(|r| r.expect("a result as the member left it"))
                    .collect();
                let counts = (d.completed(), d.failed, d.waiting_on.len());
                seen.lock()
                    .unwrap()
                    .push(Seen::Callback(counts, d.after.clone(), results));
                Ok(())
            }
        })
        .start()
        .unwrap()
}

async fn a_batch_and_its_callback_are_one_enqueue(store: Arc<dyn Store>) {
    let client = Client::new(store.clone());
    let mut batch = client.batch();
    for (n, ok) in [(10, true), (20, false), (30, true)] {
        batch = batch.add(Member { ok, n }, EnqueueOptions::new());
    }
    assert_eq!(batch.len(), 3, "the callback's position");
    let outcomes = batch
        .callback(Callback, EnqueueOptions::new())
        .enqueue()
        .await
        .unwrap();
    assert!(outcomes.iter().all(|o| !o.duplicate));
    let ids: Vec<TaskId> = outcomes.iter().map(|o| o.id).collect();
    let (members, callback) = (ids[..3].to_vec(), ids[3]);
    let pending = store.get(callback.into()).await.unwrap();
    assert_eq!(pending.state, TaskState::Pending);
    let deps = pending.deps.expect("the callback waits");
    assert_eq!(deps.after, members, "every member, in the order added");
    assert_eq!(
        deps.if_parent_fails,
        ParentFailure::Run,
        "a callback runs however its members end"
    );

    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let worker = worker(store.clone(), &seen);
    eventually(Duration::from_secs(10), "the callback ran", || async {
        seen.lock()
            .unwrap()
            .iter()
            .any(|s| matches!(s, Seen::Callback(..)))
    })
    .await;
    // Time for a second run, were there one.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(worker.shutdown(Duration::from_secs(5)).await.finished);
    let seen = seen.lock().unwrap().clone();
    let (ran_members, callbacks) = seen.split_at(3);
    let mut ran: Vec<Seen> = ran_members.to_vec();
    ran.sort_by_key(|s| match s {
        Seen::Member(n) => *n,
        Seen::Callback(..) => u32::MAX,
    });
    assert_eq!(
        ran,
        [Seen::Member(10), Seen::Member(20), Seen::Member(30)],
        "every member ran before the callback: {seen:?}"
    );
    assert_eq!(
        callbacks,
        [Seen::Callback((2, 1, 0), members.clone(), vec![10, 30])],
        "once, after all three, with the results of those that completed"
    );
    assert_eq!(
        store.get(members[1].into()).await.unwrap().state,
        TaskState::Dead
    );
    assert_eq!(
        remaining(store.as_ref(), "batch").await,
        1,
        "the dead member"
    );
}

/// Each batch fails whole, with the position at fault, before anything is
/// sent: the store holds no task after them.
async fn a_bad_batch_enqueues_nothing(store: Arc<dyn Store>) {
    let client = Client::new(store.clone());
    let member = |n| Member { ok: true, n };
    let forward = client
        .batch()
        .add(member(0), EnqueueOptions::new())
        .add(member(1), EnqueueOptions::new().after_in_batch(2))
        .add(member(2), EnqueueOptions::new())
        .callback(Callback, EnqueueOptions::new())
        .enqueue()
        .await;
    match forward {
        Err(e @ EnqueueError::Batch { position: 1, .. }) => assert_eq!(
            e.to_string(),
            "task 1 of the batch: it waits for task 2 of the batch: a task may only wait \
             for tasks added before it"
        ),
        other => panic!("a forward position: {other:?}"),
    }
    let itself = client
        .batch()
        .add(member(0), EnqueueOptions::new().after_in_batch(0))
        .enqueue()
        .await;
    assert!(
        matches!(itself, Err(EnqueueError::Batch { position: 0, .. })),
        "{itself:?}"
    );
    let single = client
        .enqueue_with(member(0), EnqueueOptions::new().after_in_batch(0))
        .await;
    assert!(
        matches!(single, Err(EnqueueError::Batch { position: 0, .. })),
        "{single:?}"
    );
    let two_queues = client
        .batch()
        .add(member(0), EnqueueOptions::new())
        .callback(Elsewhere, EnqueueOptions::new())
        .enqueue()
        .await;
    assert!(
        matches!(two_queues, Err(EnqueueError::Batch { position: 1, .. })),
        "{two_queues:?}"
    );
    // A bad key stops the batch too, before the store sees it.
    let bad_key = client
        .batch()
        .add(member(0), EnqueueOptions::new())
        .add(member(1), EnqueueOptions::new().key(""))
        .callback(Callback, EnqueueOptions::new())
        .enqueue()
        .await;
    assert!(matches!(bad_key, Err(EnqueueError::Name(_))), "{bad_key:?}");
    let stats = store.stats().await.unwrap();
    assert!(
        stats.iter().all(|s| s.counts.total() == 0),
        "nothing was enqueued: {stats:?}"
    );
    assert!(client.batch().enqueue().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_batch_and_its_callback_on_the_engine() {
    let e = Embedded::open();
    a_batch_and_its_callback_are_one_enqueue(e.store.clone()).await;
}

#[tokio::test]
async fn a_batch_and_its_callback_over_http() {
    let server = Server::builder().start().await;
    a_batch_and_its_callback_are_one_enqueue(remote(&server)).await;
}

#[tokio::test]
async fn a_batch_and_its_callback_over_resp() {
    let server = Server::builder().resp(RespLimits::default()).start().await;
    let addr = server.resp.expect("a RESP listener");
    a_batch_and_its_callback_are_one_enqueue(Arc::new(RespStore::new(addr.to_string(), None)))
        .await;
}

#[tokio::test]
async fn a_bad_batch_is_refused_on_the_engine() {
    let e = Embedded::open();
    a_bad_batch_enqueues_nothing(e.store.clone()).await;
}

#[tokio::test]
async fn a_bad_batch_is_refused_over_http() {
    let server = Server::builder().start().await;
    a_bad_batch_enqueues_nothing(remote(&server)).await;
}

#[tokio::test]
async fn a_bad_batch_is_refused_over_resp() {
    let server = Server::builder().resp(RespLimits::default()).start().await;
    let addr = server.resp.expect("a RESP listener");
    a_bad_batch_enqueues_nothing(Arc::new(RespStore::new(addr.to_string(), None))).await;
}

#[derive(Serialize, Deserialize)]
struct Step {
    /// The step's number; each one after the first adds its parent's
    /// result to its own.
    n: u32,
}

impl Job for Step {
    const KIND: &'static str = "step";
    const QUEUE: &'static str = "batch";
}

/// A chain by position: each step waits for the one before and reads its
/// result.
#[tokio::test]
async fn a_workflow_by_position_runs_in_order_on_the_engine() {
    let e = Embedded::open();
    let client = Client::new(e.store.clone());
    let ids = client
        .batch()
        .add(Step { n: 1 }, EnqueueOptions::new())
        .add(Step { n: 2 }, EnqueueOptions::new().after_in_batch(0))
        .add(Step { n: 3 }, EnqueueOptions::new().after_in_batch(1))
        .enqueue()
        .await
        .unwrap();
    assert_eq!(ids.len(), 3);
    let sums: Arc<Mutex<Vec<(u32, u32)>>> = Arc::default();
    let record = sums.clone();
    let worker = Worker::builder(e.store.clone())
        .register(move |ctx: Context, step: Step| {
            let record = record.clone();
            async move {
                let parent: u32 = match ctx.deps() {
                    Some(d) => ctx
                        .parent_result(d.after[0])
                        .expect("the step before left a result")?,
                    None => 0,
                };
                let sum = parent + step.n;
                ctx.set_result(&sum)?;
                record.lock().unwrap().push((step.n, sum));
                Ok(())
            }
        })
        .start()
        .unwrap();
    eventually(Duration::from_secs(10), "the chain ran", || async {
        sums.lock().unwrap().len() == 3
    })
    .await;
    assert!(worker.shutdown(Duration::from_secs(5)).await.finished);
    assert_eq!(*sums.lock().unwrap(), [(1, 1), (2, 3), (3, 6)]);
}

/// A callback with the policy `cancel` is one on success: a member that
/// dies cancels it, and it never runs.
#[tokio::test]
async fn an_on_success_callback_is_cancelled_by_a_dead_member() {
    let e = Embedded::open();
    let store = e.store.clone();
    let client = Client::new(store.clone());
    let ids = client
        .batch()
        .add(Member { ok: true, n: 1 }, EnqueueOptions::new())
        .add(Member { ok: false, n: 2 }, EnqueueOptions::new())
        .callback(
            Callback,
            EnqueueOptions::new().if_parent_fails(ParentFailure::Cancel),
        )
        .enqueue()
        .await
        .unwrap();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let worker = worker(store.clone(), &seen);
    eventually(Duration::from_secs(10), "the members ended", || async {
        remaining(store.as_ref(), "batch").await == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(worker.shutdown(Duration::from_secs(5)).await.finished);
    assert!(matches!(
        store.get(ids[2].id.into()).await,
        Err(StoreError::NotFound)
    ));
    assert!(
        !seen
            .lock()
            .unwrap()
            .iter()
            .any(|s| matches!(s, Seen::Callback(..))),
        "{seen:?}"
    );
}
