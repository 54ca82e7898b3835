//! `check`: offline verification reports counts on a healthy directory and
//! names the damage on a corrupt one.

use spool_core::{ClaimRequest, NewTask, Payload, QueueName, Store};
use spool_engine::{check, Engine, EngineConfig};
use spool_wal::FileStatus;

#[tokio::test]
async fn counts_tasks_per_queue_and_state_and_names_damage() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = EngineConfig::new(dir.path());
    cfg.segment_size = 16 * 1024;
    let q = QueueName::new("mail").unwrap();
    {
        let engine = Engine::open(cfg).unwrap();
        for _ in 0..50 {
            let tasks = (0..10)
                .map(|_| NewTask::new(Payload::binary(vec![1; 100])))
                .collect();
            engine.enqueue(&q, tasks).await.unwrap();
        }
        engine
            .claim(ClaimRequest::new(q.clone(), "w").max(7))
            .await
            .unwrap();
    }
    let report = check(dir.path()).unwrap();
    assert!(!report.has_corruption());
    assert!(report.log.segments.len() > 2, "expected several segments");
    assert_eq!(report.tasks, 500);
    let counts = report.queues[0].counts;
    assert_eq!((counts.ready, counts.leased), (493, 7));

    let first = &report.log.segments[0].file;
    let mut bytes = std::fs::read(first).unwrap();
    bytes[200] ^= 0x10;
    std::fs::write(first, bytes).unwrap();
    let report = check(dir.path()).unwrap();
    assert!(report.has_corruption());
    assert!(report.queues.is_empty());
    assert!(
        matches!(report.log.segments[0].status, FileStatus::Corrupt { offset, .. } if offset <= 200)
    );
}
