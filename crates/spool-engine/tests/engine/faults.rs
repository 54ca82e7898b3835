//! The engine over a fault-injecting file system: failed writes and syncs,
//! power loss that drops or tears unsynced data, and damage at rest.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spool_core::{Ack, NewTask, Payload, QueueName, Store, StoreError, TaskId, TaskRef};
use spool_engine::{Engine, EngineConfig, EngineError, RecoveryMode};
use spool_wal::{CrashMode, FaultyFs, Fs, WalError};

fn config(fs: &FaultyFs) -> EngineConfig {
    let mut cfg = EngineConfig::new("/data");
    cfg.fs = Arc::new(fs.clone());
    cfg.segment_size = 32 * 1024;
    cfg.checkpoint_bytes = 64 * 1024;
    cfg
}

fn q() -> QueueName {
    QueueName::new("faults").unwrap()
}

fn task(i: u32) -> NewTask {
    NewTask::new(Payload::binary(i.to_le_bytes().repeat(25)))
}

async fn present(engine: &Engine, id: u64) -> bool {
    engine.get(TaskRef::Id(TaskId(id))).await.is_ok()
}

async fn failed_io_fails_the_batch_and_stops_the_engine(inject: impl Fn(&FaultyFs)) {
    let fs = FaultyFs::new(7);
    let engine = Engine::open(config(&fs)).unwrap();
    let mut acked = Vec::new();
    for i in 0..20 {
        acked.push(engine.enqueue(&q(), vec![task(i)]).await.unwrap()[0].id.0);
    }
    inject(&fs);
    let err = engine.enqueue(&q(), vec![task(99)]).await.unwrap_err();
    assert_eq!(err.code(), "unavailable", "{err}");
    assert!(engine.is_poisoned());
    // Stopped for good: reads and writes alike are refused.
    let again = engine.enqueue(&q(), vec![task(100)]).await.unwrap_err();
    assert_eq!(again.code(), "unavailable");
    assert_eq!(engine.stats().await.unwrap_err().code(), "unavailable");
    drop(engine);

    fs.crash_with(CrashMode::DropUnsynced);
    let engine = Engine::open(config(&fs)).unwrap();
    for &id in &acked {
        assert!(present(&engine, id).await, "acknowledged task {id} lost");
    }
    let count = engine.stats().await.unwrap()[0].counts.ready;
    assert_eq!(
        count,
        acked.len() as u64,
        "the failed batch must not reappear"
    );
}

#[tokio::test]
async fn eio_on_fdatasync_fails_the_batch_and_poisons() {
    failed_io_fails_the_batch_and_stops_the_engine(|fs| fs.fail_sync_after(0)).await;
}

#[tokio::test]
async fn eio_on_write_fails_the_batch_and_poisons() {
    failed_io_fails_the_batch_and_stops_the_engine(|fs| fs.fail_write_after(0)).await;
}

/// Power loss under concurrent load, torn every way the fault layer knows:
/// every acknowledged enqueue and ack survives; nothing acked returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_under_load_loses_nothing_acknowledged() {
    let modes = [
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::RandomPrefix,
        CrashMode::RandomSectors,
        CrashMode::Random,
    ];
    let fs = FaultyFs::new(42);
    let enqueued = Arc::new(Mutex::new(HashSet::new()));
    let acked = Arc::new(Mutex::new(HashSet::new()));
    for (round, mode) in modes.into_iter().cycle().take(10).enumerate() {
        let engine = Arc::new(Engine::open(config(&fs)).unwrap());
        let mut workers = Vec::new();
        for w in 0..6u32 {
            let (engine, enqueued, acked) = (engine.clone(), enqueued.clone(), acked.clone());
            workers.push(tokio::spawn(async move {
                for i in 0u32.. {
                    let tasks = (0..1 + (i % 7)).map(|j| task(w * 1000 + j)).collect();
                    let Ok(ids) = engine.enqueue(&q(), tasks).await else {
                        return;
                    };
                    enqueued.lock().unwrap().extend(ids.iter().map(|o| o.id.0));
                    let req = spool_core::ClaimRequest::new(q(), format!("w{w}")).max(5);
                    let Ok(claimed) = engine.claim(req).await else {
                        return;
                    };
                    for t in claimed {
                        let token = t.lease.as_ref().unwrap().token;
                        if engine.ack(t.id, token, Ack::Done).await.is_err() {
                            return;
                        }
                        acked.lock().unwrap().insert(t.id.0);
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(60 + 17 * round as u64)).await;
        fs.crash_with(mode);
        for w in workers {
            w.await.unwrap();
        }
        drop(engine);
        let engine =
            Engine::open(config(&fs)).unwrap_or_else(|e| panic!("round {round} ({mode:?}): {e}"));
        let enqueued = enqueued.lock().unwrap().clone();
        let acked = acked.lock().unwrap().clone();
        for &id in &enqueued {
            let here = present(&engine, id).await;
            if acked.contains(&id) {
                assert!(!here, "round {round} ({mode:?}): acked task {id} came back");
            } else {
                assert!(
                    here,
                    "round {round} ({mode:?}): acknowledged enqueue {id} lost"
                );
            }
        }
    }
    assert!(enqueued.lock().unwrap().len() > 100);
}

#[tokio::test]
async fn damage_in_an_old_segment_refuses_to_start_and_names_the_place() {
    let fs = FaultyFs::new(3);
    let mut cfg = config(&fs);
    cfg.checkpoint_bytes = u64::MAX;
    let engine = Engine::open(cfg.clone()).unwrap();
    for i in 0..400 {
        engine.enqueue(&q(), vec![task(i)]).await.unwrap();
    }
    drop(engine);
    let first = std::path::Path::new("/data/wal/00000000000000000001.wal");
    fs.flip_bit(first, 300, 2).unwrap();
    let err = Engine::open(cfg.clone()).unwrap_err();
    match &err {
        EngineError::Wal(WalError::Corrupt { file, offset, .. }) => {
            assert_eq!(file, first);
            assert!(*offset <= 300, "offset {offset}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    assert!(
        err.to_string().contains("00000000000000000001.wal"),
        "{err}"
    );

    cfg.recovery = RecoveryMode::Force;
    let engine = Engine::open(cfg).expect("force starts anyway");
    let stats = engine.stats().await.unwrap();
    assert!(
        stats.iter().all(|s| s.counts.ready < 400),
        "data after the damage is dropped"
    );
    let err: StoreError = engine.get(TaskRef::Id(TaskId(399))).await.unwrap_err();
    assert_eq!(err, StoreError::NotFound);
}

/// What a task enqueued by this test carries: its own number, recognisable.
fn numbered(n: u32) -> Vec<u8> {
    format!("task {n:>8} ").repeat(8).into_bytes()
}

/// Compaction under power loss: a tenth of the tasks stay, the rest finish,
/// so segments go mostly dead and compaction moves the survivors' payloads
/// while checkpoints reclaim segments. After every crash each surviving
/// task's payload is byte-exact, and the log stays near the live data.
#[tokio::test]
async fn compaction_under_power_loss_keeps_every_live_payload() {
    let modes = [
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::RandomPrefix,
        CrashMode::RandomSectors,
        CrashMode::Random,
    ];
    let fs = FaultyFs::new(99);
    // Surviving tasks (enqueue acknowledged, never acked) and their payloads.
    let kept: Arc<Mutex<Vec<(u64, u32)>>> = Arc::default();
    let mut written = 0u64;
    for (round, mode) in modes.into_iter().cycle().take(10).enumerate() {
        let engine = Arc::new(Engine::open(config(&fs)).unwrap());
        let (e, k) = (engine.clone(), kept.clone());
        let base = round as u32 * 1_000_000;
        let worker = tokio::spawn(async move {
            let mut sent = 0u64;
            for i in 0u32.. {
                let n = base + i * 10;
                let tasks = (n..n + 10)
                    .map(|m| NewTask::new(Payload::binary(numbered(m))))
                    .collect();
                let Ok(ids) = e.enqueue(&q(), tasks).await else {
                    return sent;
                };
                sent += 10;
                k.lock().unwrap().push((ids[0].id.0, n));
                let done: Vec<TaskId> = ids[1..].iter().map(|o| o.id).collect();
                for id in done {
                    if e.cancel(TaskRef::Id(id)).await.is_err() {
                        return sent;
                    }
                }
            }
            sent
        });
        tokio::time::sleep(Duration::from_millis(150 + 23 * round as u64)).await;
        fs.crash_with(mode);
        written += worker.await.unwrap();
        drop(engine);
        let engine =
            Engine::open(config(&fs)).unwrap_or_else(|e| panic!("round {round} ({mode:?}): {e}"));
        let survivors = kept.lock().unwrap().clone();
        for &(id, n) in &survivors {
            let task = engine
                .get(TaskRef::Id(TaskId(id)))
                .await
                .unwrap_or_else(|e| panic!("round {round} ({mode:?}): task {id}: {e}"));
            assert!(
                task.payload.bytes == numbered(n)[..],
                "round {round} ({mode:?}): task {id}'s payload changed"
            );
        }
    }
    let live = kept.lock().unwrap().len() as u64 * numbered(0).len() as u64;
    let log: u64 = fs
        .list(Path::new("/data/wal"))
        .unwrap()
        .iter()
        .map(|name| {
            fs.open_read(&Path::new("/data/wal").join(name))
                .unwrap()
                .len()
                .unwrap()
        })
        .sum();
    eprintln!("log {log} bytes, live payloads {live} bytes, {written} tasks written");
    assert!(written > 5_000, "{written} tasks written");
    assert!(
        log < 4 * live + 512 * 1024,
        "the log holds {log} bytes for {live} bytes of live payloads"
    );
}
