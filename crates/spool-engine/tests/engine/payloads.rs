//! Payloads live in the log: every size a queue allows comes back
//! byte-exact through checkpoints and restarts, and the space of finished
//! tasks is given back once their segments hold nothing live.

use std::path::Path;

use spool_core::{
    ClaimRequest, NewTask, Payload, QueueName, QueueSettings, Store, TaskId, TaskPatch, TaskRef,
};
use spool_engine::{Engine, EngineConfig};

const MIB: usize = 1024 * 1024;

fn q() -> QueueName {
    QueueName::new("blobs").unwrap()
}

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    // Small segments, so payloads spread over many and rollovers happen.
    c.segment_size = 4 * MIB as u64;
    c
}

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn wal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join("wal"))
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_of_every_size_survive_checkpoints_and_restarts_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = [0, 1, 100, 4095, 64 * 1024, MIB, 5 * MIB, 16 * MIB];
    let mut expected: Vec<(TaskId, Vec<u8>)> = Vec::new();
    {
        let engine = Engine::open(config(dir.path())).unwrap();
        let settings = QueueSettings {
            max_payload: 16 * MIB as u64,
            ..QueueSettings::default()
        };
        engine.put_queue(&q(), settings.into()).await.unwrap();
        for (i, &len) in sizes.iter().enumerate() {
            let body = bytes(len, i as u8);
            let out = engine
                .enqueue(&q(), vec![NewTask::new(Payload::binary(body.clone()))])
                .await
                .unwrap();
            expected.push((out[0].id, body));
            // Filler between them, acked at once: segments fill with the
            // dead bytes of finished tasks around the live payloads.
            let filler = (0..200)
                .map(|_| NewTask::new(Payload::binary(bytes(20_000, 9))))
                .collect();
            engine.enqueue(&q(), filler).await.unwrap();
            let claimed = engine
                .claim(ClaimRequest::new(q(), "w").max(1000))
                .await
                .unwrap();
            let acks = claimed
                .iter()
                .filter(|t| !expected.iter().any(|(id, _)| *id == t.id))
                .map(|t| (t.id, t.lease.as_ref().unwrap().token))
                .collect();
            engine.ack_many(acks).await.unwrap();
            for t in claimed
                .iter()
                .filter(|t| expected.iter().any(|(id, _)| *id == t.id))
            {
                engine
                    .release(t.id, t.lease.as_ref().unwrap().token)
                    .await
                    .unwrap();
            }
            engine.checkpoint().await.unwrap();
        }
        // One payload replaced by an update: the new bytes are the ones kept.
        let (id, _) = expected[2];
        let new = bytes(3000, 77);
        engine
            .update(
                TaskRef::Id(id),
                TaskPatch {
                    payload: Some(Payload::binary(new.clone())),
                    ..TaskPatch::default()
                },
            )
            .await
            .unwrap();
        expected[2].1 = new;
        engine.checkpoint().await.unwrap();
        engine.checkpoint().await.unwrap();
    }
    for round in 0..2 {
        let engine = Engine::open(config(dir.path())).unwrap();
        for (id, body) in &expected {
            let task = engine.get(TaskRef::Id(*id)).await.unwrap();
            assert_eq!(
                task.payload.bytes.len(),
                body.len(),
                "task {id} in round {round}"
            );
            assert!(
                task.payload.bytes == body[..],
                "task {id} differs in round {round}"
            );
        }
        engine.checkpoint().await.unwrap();
    }
    let report = spool_engine::check(dir.path()).unwrap();
    assert_eq!(report.bad_payloads, 0, "{:?}", report.payload_errors);
    assert_eq!(report.tasks, sizes.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_store_gives_its_log_space_back() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(config(dir.path())).unwrap();
    // A task that stays throughout pins its segment, not the ones after it.
    let keeper = engine
        .enqueue(&q(), vec![NewTask::new(Payload::binary(bytes(10, 1)))])
        .await
        .unwrap()[0]
        .id;
    for _ in 0..40 {
        let tasks = (0..100)
            .map(|_| NewTask::new(Payload::binary(bytes(10_000, 2))))
            .collect();
        engine.enqueue(&q(), tasks).await.unwrap();
    }
    let full = wal_bytes(dir.path());
    assert!(full > 30 * MIB as u64, "{full}");
    loop {
        let claimed = engine
            .claim(ClaimRequest::new(q(), "w").max(1000))
            .await
            .unwrap();
        let acks: Vec<_> = claimed
            .iter()
            .filter(|t| t.id != keeper)
            .map(|t| (t.id, t.lease.as_ref().unwrap().token))
            .collect();
        if acks.is_empty() {
            break;
        }
        engine.ack_many(acks).await.unwrap();
    }
    // Segments go once they are below the older of two checkpoints, and
    // the keeper's once compaction (reading off the core thread, between
    // checkpoints) has moved its payload out: a few checkpoints at most.
    let bound = 2 * 4 * MIB as u64 + MIB as u64;
    let mut drained = u64::MAX;
    for _ in 0..50 {
        engine.checkpoint().await.unwrap();
        drained = wal_bytes(dir.path());
        if drained < bound {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        drained < bound,
        "{drained} bytes of log left of {full} after the drain"
    );
    drop(engine);
    let engine = Engine::open(config(dir.path())).unwrap();
    let task = engine.get(TaskRef::Id(keeper)).await.unwrap();
    assert!(task.payload.bytes == bytes(10, 1)[..]);
    let report = spool_engine::check(dir.path()).unwrap();
    assert!(!report.has_corruption(), "{:?}", report.log);
    assert_eq!(report.tasks, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_too_big_for_one_log_record_is_refused_and_the_engine_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(config(dir.path())).unwrap();
    let settings = QueueSettings {
        max_payload: 16 * MIB as u64,
        ..QueueSettings::default()
    };
    engine.put_queue(&q(), settings.into()).await.unwrap();
    // Each payload is allowed; together they pass the log's record limit.
    let tasks = (0..6)
        .map(|i| NewTask::new(Payload::binary(bytes(15 * MIB, i))))
        .collect();
    let err = engine.enqueue(&q(), tasks).await.unwrap_err();
    assert_eq!(err.code(), "bad_request", "{err}");
    let ok = engine
        .enqueue(&q(), vec![NewTask::new(Payload::binary(bytes(10, 3)))])
        .await
        .unwrap();
    let task = engine.get(TaskRef::Id(ok[0].id)).await.unwrap();
    assert!(task.payload.bytes == bytes(10, 3)[..]);
    assert!(!engine.is_poisoned());
}

/// Claims parked on an empty queue get the tasks enqueued next with their
/// payloads exact, whether handed over in the enqueue's own loop turn (the
/// core still holds the bytes) or read back from the log: small and large
/// payloads, and a batch larger than the waiting claims take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_claims_get_fresh_payloads_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let engine = std::sync::Arc::new(Engine::open(config(dir.path())).unwrap());
    let settings = QueueSettings {
        max_payload: 4 * MIB as u64,
        ..QueueSettings::default()
    };
    engine.put_queue(&q(), settings.into()).await.unwrap();
    for (round, sizes) in [vec![1, 100], vec![3 * MIB], vec![200; 40]]
        .into_iter()
        .enumerate()
    {
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let engine = engine.clone();
                tokio::spawn(async move {
                    let req = ClaimRequest::new(q(), "w")
                        .max(10)
                        .wait(std::time::Duration::from_secs(10));
                    engine.claim(req).await.unwrap()
                })
            })
            .collect();
        // Let both park before the tasks arrive.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let bodies: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(i, &len)| bytes(len, (round * 50 + i) as u8))
            .collect();
        let tasks = bodies
            .iter()
            .map(|b| NewTask::new(Payload::binary(b.clone())))
            .collect();
        let ids = engine.enqueue(&q(), tasks).await.unwrap();
        let mut claimed = Vec::new();
        for w in waiters {
            claimed.extend(w.await.unwrap());
        }
        assert_eq!(claimed.len(), sizes.len().min(20), "round {round}");
        for task in claimed {
            let i = ids.iter().position(|o| o.id == task.id).unwrap();
            assert!(
                task.payload.bytes == bodies[i][..],
                "round {round}: task {} got another payload",
                task.id
            );
        }
        // What the waiters did not take is read from the log.
        for task in engine
            .claim(ClaimRequest::new(q(), "w").max(100))
            .await
            .unwrap()
        {
            let i = ids.iter().position(|o| o.id == task.id).unwrap();
            assert!(task.payload.bytes == bodies[i][..], "round {round}");
        }
    }
}
