//! An operation too big for one log record must never stop the engine: the
//! WAL refuses a record over `MAX_RECORD_LEN`, and a refused write after
//! the change was applied poisons the log for good (every later request
//! answers `unavailable`). So an operation is either split into bounded
//! records or refused with `bad_request` before anything changes.

use std::time::Duration;

use spool_core::{Ack, ClaimRequest, Kind, NewTask, Payload, QueueName, Store};
use spool_engine::{Engine, EngineConfig};

fn q() -> QueueName {
    QueueName::new("limits").unwrap()
}

/// The engine still takes and keeps a write.
async fn still_writes(engine: &Engine) {
    assert!(!engine.is_poisoned(), "the engine stopped");
    engine
        .enqueue(&q(), vec![NewTask::new(Payload::binary(vec![7]))])
        .await
        .expect("an enqueue after the big operation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_long_kinds_near_the_record_limit_does_not_stop_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(dir.path())).unwrap();
    let kind = Kind::new("k".repeat(128)).unwrap();
    let n = spool_core::store::MAX_BATCH;
    // Payloads plus 64 bytes each stay within the limit; the encoded tasks
    // (kind, lengths, times, lease) do not.
    let each = spool_wal::MAX_RECORD_LEN / n - 64;
    let tasks: Vec<NewTask> = (0..n)
        .map(|_| {
            let mut t = NewTask::new(Payload::binary(vec![1; each])).kind(kind.clone());
            t.lease_ms = Some(60_000);
            t
        })
        .collect();
    match engine.enqueue(&q(), tasks).await {
        Ok(done) => assert_eq!(done.len(), n),
        Err(e) => assert_eq!(e.code(), "bad_request", "{e}"),
    }
    still_writes(&engine).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "heavy: makes 4 million dead tasks (about 40 s and 2.5 GB of memory); run with --ignored"]
async fn retrying_millions_of_dead_tasks_does_not_stop_the_engine() {
    // A retry of one dead task is 22 bytes of log: this many overflow one
    // record.
    const DEAD: u64 = 4_000_000;
    let dir = tempfile::tempdir().unwrap();
    let engine = std::sync::Arc::new(Engine::open(EngineConfig::new(dir.path())).unwrap());
    let mut made = 0;
    while made < DEAD {
        let tasks = (0..spool_core::store::MAX_BATCH)
            .map(|_| {
                let mut t = NewTask::new(Payload::binary(vec![1]));
                t.max_attempts = Some(1);
                t
            })
            .collect();
        made += engine.enqueue(&q(), tasks).await.unwrap().len() as u64;
    }
    // Leases of 1 ms on the only attempt: each expiry kills its task.
    let claimers: Vec<_> = (0..8)
        .map(|i| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let req = ClaimRequest::new(q(), format!("w{i}"))
                    .max(spool_core::store::MAX_CLAIM)
                    .lease(Duration::from_millis(1));
                while !engine.claim(req.clone()).await.unwrap().is_empty() {}
            })
        })
        .collect();
    for c in claimers {
        c.await.unwrap();
    }
    let dead = || async {
        let stats = engine.stats().await.unwrap();
        stats.iter().find(|s| s.name == q()).unwrap().counts.dead
    };
    let until = std::time::Instant::now() + Duration::from_secs(120);
    while dead().await < DEAD {
        assert!(std::time::Instant::now() < until, "leases did not expire");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(engine.retry_dead(&q()).await.unwrap(), DEAD);
    still_writes(&engine).await;
    let stats = engine.stats().await.unwrap();
    let counts = stats.iter().find(|s| s.name == q()).unwrap().counts;
    assert_eq!(counts.dead, 0);
}

/// What a task's ending does to the tasks waiting for it goes in the
/// record that ends it, so the number waiting for one task is bounded:
/// past it an enqueue is refused, and the parent's ending (releasing all
/// of them in one record) still writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waited_for_by_the_most_tasks_still_ends() {
    use spool_core::Parent;
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(dir.path())).unwrap();
    let parent = engine
        .enqueue(&q(), vec![NewTask::new(Payload::binary(vec![1]))])
        .await
        .unwrap()[0]
        .id;
    let child = || NewTask::new(Payload::binary(vec![2])).after(Parent::Task(parent));
    let batch = spool_core::store::MAX_BATCH;
    for _ in 0..100_000 / batch {
        engine.enqueue(&q(), vec![child(); batch]).await.unwrap();
    }
    let refused = engine.enqueue(&q(), vec![child()]).await.unwrap_err();
    assert_eq!(refused.code(), "bad_request", "{refused}");
    let t = engine
        .claim(ClaimRequest::new(q(), "w"))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(t.id, parent);
    let token = t.lease.unwrap().token;
    engine.ack(parent, token, Ack::Done).await.unwrap();
    still_writes(&engine).await;
    let stats = engine.stats().await.unwrap();
    assert_eq!(stats[0].counts.ready, 100_001, "every child released");
    assert_eq!(stats[0].counts.pending, 0);
}
