//! Checkpoints copied while writes continue: after a restart from such a
//! checkpoint plus the log, state is exactly what it was; old segments are
//! reclaimed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use spool_core::{
    Ack, ClaimRequest, FailRequest, ListRequest, NewTask, Payload, QueueName, Store, Task,
    TaskGroup, TaskKey, TaskState,
};
use spool_engine::{Engine, EngineConfig};

fn q() -> QueueName {
    QueueName::new("busy").unwrap()
}

async fn everything(engine: &Engine) -> Vec<Task> {
    let mut req = ListRequest::new(q());
    req.limit = 1000;
    let mut all = Vec::new();
    loop {
        let page = engine.list(req.clone()).await.unwrap();
        all.extend(page.tasks);
        match page.next_cursor {
            Some(c) => req.cursor = Some(c),
            None => return all,
        }
    }
}

async fn churn(engine: Arc<Engine>, stop: Arc<AtomicBool>, worker: u32) {
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let tasks = (0..20)
            .map(|i| {
                n += 1;
                let t = NewTask::new(Payload::binary(vec![worker as u8; 64]));
                match i % 5 {
                    0 => t.key(TaskKey::new(format!("w{worker}-{n}")).unwrap()),
                    1 => t.traceparent(format!("00-{n:032x}-{:016x}-01", worker + 1)),
                    2 => t.group(TaskGroup::new(format!("tenant {}", n % 7)).unwrap()),
                    _ => t,
                }
            })
            .collect();
        engine.enqueue(&q(), tasks).await.unwrap();
        let req = ClaimRequest::new(q(), format!("w{worker}")).max(15);
        let claimed = engine.claim(req).await.unwrap();
        for t in claimed {
            let token = t.lease.as_ref().unwrap().token;
            let choice = rand::thread_rng().gen_range(0..4);
            match choice {
                0 => engine.ack(t.id, token, Ack::Done).await.unwrap(),
                1 => {
                    engine
                        .fail(t.id, token, FailRequest::new("flaky"))
                        .await
                        .unwrap();
                }
                2 => engine.release(t.id, token).await.unwrap(),
                _ => {}
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_during_writes_restores_exact_state_and_reclaims_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = EngineConfig::new(dir.path());
    cfg.segment_size = 256 * 1024;
    cfg.checkpoint_bytes = u64::MAX;
    let engine = Arc::new(Engine::open(cfg.clone()).unwrap());
    // Enough tasks that a copy takes many slices, so writes land mid-copy.
    for _ in 0..20 {
        let batch = (0..1000)
            .map(|_| NewTask::new(Payload::binary(vec![1; 64])))
            .collect();
        engine.enqueue(&q(), batch).await.unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| tokio::spawn(churn(engine.clone(), stop.clone(), w)))
        .collect();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        engine.checkpoint().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let before = everything(&engine).await;
    let stats_before = engine.stats().await.unwrap();
    let groups_before = engine.groups(&q(), 100).await.unwrap();
    drop(engine);

    let segments = std::fs::read_dir(dir.path().join("wal")).unwrap().count();
    let engine = Engine::open(cfg).unwrap();
    let after = everything(&engine).await;
    assert_eq!(before.len(), after.len(), "task count after restart");
    assert!(
        after.iter().any(|t| t.traceparent.is_some()),
        "traced tasks are among them"
    );
    assert!(
        after.iter().any(|t| t.group.is_some()),
        "grouped tasks are among them"
    );
    // Scheduled vs ready follows the clock, which moved during the restart:
    // a retry's run_at may have come meanwhile. Everything else is exact.
    let waiting = |tasks: Vec<Task>| -> Vec<Task> {
        tasks
            .into_iter()
            .map(|mut t| {
                if t.state == TaskState::Scheduled {
                    t.state = TaskState::Ready;
                }
                t
            })
            .collect()
    };
    assert!(
        waiting(before) == waiting(after),
        "every task exactly as it was"
    );
    assert_eq!(
        engine.groups(&q(), 100).await.unwrap(),
        groups_before,
        "each group's counts, rebuilt"
    );
    let stats_after = engine.stats().await.unwrap();
    let (b, a) = (stats_before[0].counts, stats_after[0].counts);
    assert_eq!(
        (b.scheduled + b.ready, b.leased, b.dead),
        (a.scheduled + a.ready, a.leased, a.dead)
    );

    // Compare with a fresh log of the same writes: without checkpoints the
    // log would hold every segment ever written.
    let snapshots = std::fs::read_dir(dir.path().join("snap")).unwrap().count();
    assert!(snapshots <= 2, "old checkpoints are deleted: {snapshots}");
    assert!(
        segments < 40,
        "segments below the previous checkpoint are deleted: {segments}"
    );
}
