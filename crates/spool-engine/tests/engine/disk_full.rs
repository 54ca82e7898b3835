//! The engine on a full disk (FaultyFs's ENOSPC past a capacity): at a
//! segment rollover, at open, and while writing a checkpoint. Nothing
//! acknowledged is lost, and the engine writes again once space is freed.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use spool_core::{NewTask, Payload, QueueName, Store, TaskId, TaskRef};
use spool_engine::{Engine, EngineConfig};
use spool_wal::{CrashMode, FaultyFs, Fs};

const SEGMENT: u64 = 32 * 1024;

fn config(fs: &FaultyFs) -> EngineConfig {
    let mut cfg = EngineConfig::new("/data");
    cfg.fs = Arc::new(fs.clone());
    cfg.segment_size = SEGMENT;
    cfg.checkpoint_bytes = u64::MAX;
    cfg
}

fn q() -> QueueName {
    QueueName::new("full").unwrap()
}

fn task(i: u32) -> NewTask {
    NewTask::new(Payload::binary(i.to_le_bytes().repeat(100)))
}

async fn assert_all_present(engine: &Engine, acked: &[u64]) {
    for &id in acked {
        assert!(
            engine.get(TaskRef::Id(TaskId(id))).await.is_ok(),
            "acknowledged task {id} lost"
        );
    }
}

/// Enqueues one task at a time until `n` were refused; every refusal must
/// be `unavailable`. Returns the ids acknowledged meanwhile.
async fn enqueue_until_refused(engine: &Engine, n: usize) -> Vec<u64> {
    let (mut acked, mut refused) = (Vec::new(), 0);
    for i in 0..10_000 {
        match engine.enqueue(&q(), vec![task(i)]).await {
            Ok(ids) => acked.push(ids[0].id.0),
            Err(e) => {
                assert_eq!(e.code(), "unavailable", "{e}");
                refused += 1;
                if refused == n {
                    return acked;
                }
            }
        }
    }
    panic!("a full disk never refused a write");
}

/// Enqueues until one succeeds (the engine noticed the freed space).
async fn enqueue_once_space_is_back(engine: &Engine) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match engine.enqueue(&q(), vec![task(7)]).await {
            Ok(ids) => return ids[0].id.0,
            Err(e) => {
                assert_eq!(e.code(), "unavailable", "{e}");
                assert!(Instant::now() < deadline, "writes never resumed: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

#[tokio::test]
async fn a_full_disk_at_rollover_refuses_writes_then_resumes_without_a_restart() {
    let fs = FaultyFs::new(1);
    let engine = Engine::open(config(&fs)).unwrap();
    let mut acked = Vec::new();
    for i in 0..10 {
        acked.push(engine.enqueue(&q(), vec![task(i)]).await.unwrap()[0].id.0);
    }
    fs.set_capacity(Some(fs.used_bytes()));

    acked.extend(enqueue_until_refused(&engine, 20).await);
    assert!(
        !engine.is_poisoned(),
        "a full disk must refuse writes, not stop the engine"
    );
    let first = fs.open_read(Path::new("/data/wal/00000000000000000001.wal"));
    assert!(
        first.unwrap().len().unwrap() >= SEGMENT,
        "the segment being written is finished before writes are refused"
    );
    assert_all_present(&engine, &acked).await;

    fs.set_capacity(None);
    acked.push(enqueue_once_space_is_back(&engine).await);
    for i in 0..200 {
        acked.push(engine.enqueue(&q(), vec![task(i)]).await.unwrap()[0].id.0);
    }
    drop(engine);

    fs.crash_with(CrashMode::DropUnsynced);
    let engine = Engine::open(config(&fs)).unwrap();
    assert_all_present(&engine, &acked).await;
    assert_eq!(
        engine.stats().await.unwrap()[0].counts.ready,
        acked.len() as u64
    );
}

async fn opens_on_a_full_disk(crash: bool) {
    let fs = FaultyFs::new(2);
    let engine = Engine::open(config(&fs)).unwrap();
    let mut acked = Vec::new();
    for i in 0..30 {
        acked.push(engine.enqueue(&q(), vec![task(i)]).await.unwrap()[0].id.0);
    }
    fs.set_capacity(Some(fs.used_bytes()));
    if crash {
        fs.crash_with(CrashMode::DropUnsynced);
    }
    drop(engine);
    // Whatever closing freed, something else took: the disk stays full.
    fs.set_capacity(Some(fs.used_bytes()));

    let engine = Engine::open(config(&fs)).expect("a full disk with intact data must open");
    assert_all_present(&engine, &acked).await;

    fs.set_capacity(None);
    acked.push(enqueue_once_space_is_back(&engine).await);
    drop(engine);
    let engine = Engine::open(config(&fs)).unwrap();
    assert_all_present(&engine, &acked).await;
}

#[tokio::test]
async fn opens_on_a_full_disk_after_a_clean_close() {
    opens_on_a_full_disk(false).await;
}

#[tokio::test]
async fn opens_on_a_full_disk_after_power_loss() {
    opens_on_a_full_disk(true).await;
}

fn snapshots(fs: &FaultyFs) -> Vec<String> {
    let mut names = fs.list(Path::new("/data/snap")).unwrap();
    names.sort();
    names
}

#[tokio::test]
async fn a_failed_checkpoint_removes_its_temp_file_and_backs_off() {
    let fs = FaultyFs::new(3);
    let mut cfg = config(&fs);
    cfg.checkpoint_bytes = 4 * 1024;
    cfg.checkpoint_backoff_min = Duration::from_secs(3);
    let engine = Engine::open(cfg).unwrap();
    for i in 0..10 {
        engine.enqueue(&q(), vec![task(i)]).await.unwrap();
    }
    engine.checkpoint().await.unwrap();
    let published = snapshots(&fs);
    fs.set_capacity(Some(fs.used_bytes()));
    let err = engine.checkpoint().await.unwrap_err();
    let failed_at = Instant::now();
    assert!(err.to_string().contains("checkpoint"), "{err}");
    assert_eq!(
        snapshots(&fs),
        published,
        "the failed checkpoint left its file"
    );

    // Space is back and the log keeps growing past checkpoint_bytes, yet no
    // checkpoint starts before the backoff has passed.
    fs.set_capacity(None);
    let mut i = 100;
    while failed_at.elapsed() < Duration::from_secs(1) {
        engine.enqueue(&q(), vec![task(i)]).await.unwrap();
        i += 1;
        assert_eq!(
            snapshots(&fs),
            published,
            "a checkpoint was retried at once after a failure"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while snapshots(&fs)
        .iter()
        .all(|n| published.contains(n) || !n.ends_with(".snap"))
    {
        assert!(
            Instant::now() < deadline,
            "the checkpoint was never retried"
        );
        engine.enqueue(&q(), vec![task(i)]).await.unwrap();
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A disk with room never refuses a write: concurrent producers cross
/// several segment rollovers, each of which spends the reserve while its
/// batch is in flight and takes the next one before it answers. Requests
/// that arrive in that window wait for the batch; none hears "disk full"
/// (before, about one rollover in three refused a request that way).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rollovers_under_load_never_answer_disk_full() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = EngineConfig::new(dir.path());
    // Full-size segments: their preallocation takes long enough for
    // requests to arrive while it runs.
    cfg.segment_size = 64 * 1024 * 1024;
    let engine = Arc::new(Engine::open(cfg).unwrap());
    let producers: Vec<_> = (0..8)
        .map(|p| {
            let engine = engine.clone();
            tokio::spawn(async move {
                for i in 0..250u32 {
                    let tasks = (0..500).map(|j| task(p * 100_000 + i * 500 + j)).collect();
                    if let Err(e) = engine.enqueue(&q(), tasks).await {
                        panic!("producer {p}, batch {i}: {e}");
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
}
