//! Retrying dead and failed tasks, on a clock that stands still unless moved:
//! what comes out of a claim afterwards, and what a task remembers of its
//! failures, also across a restart.

use std::sync::Arc;
use std::time::Duration;

use spool_core::{
    ClaimRequest, FailRequest, ManualClock, NewTask, Payload, QueueName, Store, Task, TaskId,
    TaskRef, TaskState, Timestamp,
};
use spool_engine::{Engine, EngineConfig};

const START: Timestamp = Timestamp(1_700_000_000_000);

struct Setup {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            dir: tempfile::tempdir().unwrap(),
            clock: Arc::new(ManualClock::new(START)),
        }
    }

    fn open(&self) -> Engine {
        let mut cfg = EngineConfig::new(self.dir.path());
        cfg.clock = self.clock.clone();
        Engine::open(cfg).unwrap()
    }
}

fn q() -> QueueName {
    QueueName::new("retries").unwrap()
}

async fn enqueue(engine: &Engine, priority: i16) -> TaskId {
    let task = NewTask::new(Payload::binary(vec![1])).priority(priority);
    engine.enqueue(&q(), vec![task]).await.unwrap()[0].id
}

async fn claim(engine: &Engine, max: u32) -> Vec<Task> {
    engine
        .claim(ClaimRequest::new(q(), "w").max(max))
        .await
        .unwrap()
}

async fn claim_one(engine: &Engine, id: TaskId) -> Task {
    let got = claim(engine, 1).await;
    assert_eq!(ids(&got), vec![id], "the claim should hand out {id}");
    got.into_iter().next().unwrap()
}

fn ids(tasks: &[Task]) -> Vec<TaskId> {
    tasks.iter().map(|t| t.id).collect()
}

/// Fails a claimed task: dead with `discard`, else due again at once.
async fn fail_claimed(engine: &Engine, t: &Task, message: &str, discard: bool) -> Task {
    let req = FailRequest {
        message: message.into(),
        retry_at: Some(engine.now().await.unwrap()),
        discard,
    };
    let token = t.lease.as_ref().unwrap().token;
    engine.fail(t.id, token, req).await.unwrap()
}

/// Claims `id`, which must be the front of claim order, and fails it.
async fn fail(engine: &Engine, id: TaskId, message: &str, discard: bool) -> Task {
    let t = claim_one(engine, id).await;
    fail_claimed(engine, &t, message, discard).await
}

async fn errors(engine: &Engine, id: TaskId) -> Vec<(u32, Timestamp, String)> {
    let t = engine.get(TaskRef::Id(id)).await.unwrap();
    t.errors
        .into_iter()
        .map(|e| (e.attempt, e.at, e.message))
        .collect()
}

/// A task revived by retry_dead, or by retry, with run_at = now takes its
/// place by (priority, run_at, id): before the tasks of the same priority
/// and run_at that have higher ids, even those enqueued after it died;
/// after every task of a lower priority number; and after the tasks that
/// were due earlier.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revived_tasks_come_out_in_priority_run_at_id_order() {
    let s = Setup::new();
    let engine = s.open();

    // All at START: the order among equals is the id.
    let a = enqueue(&engine, 0).await;
    let b = enqueue(&engine, 0).await;
    let urgent = enqueue(&engine, -1).await;
    let got = claim(&engine, 3).await;
    assert_eq!(ids(&got), vec![urgent, a, b]);
    let dead = fail_claimed(&engine, &got[0], "no", true).await;
    assert_eq!(dead.state, TaskState::Dead);
    engine
        .release(a, got[1].lease.as_ref().unwrap().token)
        .await
        .unwrap();
    let dead = fail_claimed(&engine, &got[2], "no", true).await;
    assert_eq!(dead.state, TaskState::Dead);
    let c = enqueue(&engine, 0).await;
    let d = enqueue(&engine, 1).await;
    assert_eq!(engine.retry_dead(&q()).await.unwrap(), 2);
    assert_eq!(ids(&claim(&engine, 10).await), vec![urgent, a, b, c, d]);

    // One dead task revived by retry, another by retry_dead, a failed one
    // due again: all at the same run_at, so by id again.
    let e = enqueue(&engine, 0).await;
    let f = enqueue(&engine, 0).await;
    let g = enqueue(&engine, 0).await;
    let h = enqueue(&engine, 0).await;
    let got = claim(&engine, 3).await;
    assert_eq!(ids(&got), vec![e, f, g]);
    for (t, discard) in got.iter().zip([true, true, false]) {
        fail_claimed(&engine, t, "no", discard).await;
    }
    let i = enqueue(&engine, 0).await;
    assert_eq!(engine.retry(f).await.unwrap().state, TaskState::Ready);
    assert_eq!(engine.retry_dead(&q()).await.unwrap(), 1);
    assert_eq!(ids(&claim(&engine, 10).await), vec![e, f, g, h, i]);

    // Revived later than the others became due: after them, whatever its id.
    let j = enqueue(&engine, 0).await;
    assert_eq!(fail(&engine, j, "no", true).await.state, TaskState::Dead);
    let k = enqueue(&engine, 0).await;
    s.clock.advance(Duration::from_millis(5));
    let later = START.plus(Duration::from_millis(5));
    assert_eq!(engine.retry(j).await.unwrap().run_at, later);
    let l = enqueue(&engine, 0).await;
    assert_eq!(ids(&claim(&engine, 10).await), vec![k, j, l]);

    // The same order after a restart, which rebuilds the ready index from
    // the log.
    let m = enqueue(&engine, 0).await;
    assert_eq!(fail(&engine, m, "no", true).await.state, TaskState::Dead);
    let n = enqueue(&engine, 0).await;
    assert_eq!(engine.retry_dead(&q()).await.unwrap(), 1);
    drop(engine);
    let engine = s.open();
    assert_eq!(ids(&claim(&engine, 10).await), vec![m, n]);
}

/// Every failure is recorded, even one just like the failure before it (same
/// attempt, same message, same millisecond): after a retry the attempt
/// counts from 0 again. The log and a checkpoint keep both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_like_the_one_before_it_is_recorded_too() {
    let s = Setup::new();
    let engine = s.open();
    let id = enqueue(&engine, 0).await;
    fail(&engine, id, "boom", true).await;
    engine.retry(id).await.unwrap();
    fail(&engine, id, "boom", true).await;
    assert_eq!(engine.retry_dead(&q()).await.unwrap(), 1);
    let last = fail(&engine, id, "boom", false).await;
    assert_eq!(last.state, TaskState::Ready);
    let boom = (1, START, "boom".to_string());
    let expected = vec![boom.clone(), boom.clone(), boom];
    assert_eq!(errors(&engine, id).await, expected);

    // From the log alone.
    drop(engine);
    let engine = s.open();
    assert_eq!(errors(&engine, id).await, expected);

    // From a checkpoint, then from a checkpoint and the log after it.
    engine.checkpoint().await.unwrap();
    drop(engine);
    let engine = s.open();
    assert_eq!(errors(&engine, id).await, expected);
    let more = fail(&engine, id, "boom", false).await;
    assert_eq!(more.errors.len(), 4);
    drop(engine);
    let engine = s.open();
    assert_eq!(errors(&engine, id).await.len(), 4);
}
