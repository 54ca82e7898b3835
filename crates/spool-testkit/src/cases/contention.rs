//! Exactly-once hand-out under contention (docs/spec.md §3): many claimers racing
//! over one queue while a producer fills it never get the same task twice
//! while its lease is valid, and together drain it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use spool_core::{
    ClaimRequest, ListRequest, NewTask, Payload, QueueName, QueueSettings, Store, TaskId,
};
use tokio::task::JoinSet;

use crate::arrange::*;
use crate::fixture::Fixture;

/// Tasks per enqueue batch.
const ENQUEUE_BATCH: usize = 1000;
/// Tasks per claim.
const CLAIM_BATCH: u32 = 10;
/// How long one claim waits for work.
const CLAIM_WAIT: Duration = Duration::from_millis(100);
/// Empty claims in a row, after the producer is done, before a claimer
/// decides the queue is drained (or that the store lost tasks).
const IDLE_CLAIMS: u32 = 20;

/// 100,000 tasks and 100 claimers.
pub async fn every_task_handed_out_exactly_once_under_contention(fx: Fixture) {
    exactly_once_under_contention(fx, 100_000, 100).await;
}

/// `claimers` concurrent workers claim batches of tasks and ack them while
/// `tasks` tasks are enqueued in batches of 1,000: every task must be handed
/// out exactly once and acked, leaving the queue empty.
///
/// The lease is long enough that none expires during the run, so a second
/// hand-out of any task is a broken guarantee, not a legitimate retry.
pub async fn exactly_once_under_contention(fx: Fixture, tasks: usize, claimers: usize) {
    let settings = QueueSettings {
        lease: Duration::from_secs(600),
        ..QueueSettings::default()
    };
    let q = make_queue(&fx, "contention", settings).await;
    let produced = Arc::new(AtomicBool::new(false));
    let claimed = Arc::new(AtomicUsize::new(0));

    let mut workers = JoinSet::new();
    for n in 0..claimers {
        let claimer = Claimer {
            store: fx.store.clone(),
            queue: q.clone(),
            worker: format!("claimer-{n}"),
            produced: produced.clone(),
            claimed: claimed.clone(),
            tasks,
        };
        workers.spawn(claimer.run());
    }

    let mut created = Vec::with_capacity(tasks);
    for start in (0..tasks).step_by(ENQUEUE_BATCH) {
        let batch = (start..tasks.min(start + ENQUEUE_BATCH))
            .map(|i| NewTask::new(Payload::binary(i.to_le_bytes().to_vec())))
            .collect();
        let out = fx.store.enqueue(&q, batch).await.expect("enqueue a batch");
        created.extend(out.iter().map(|o| o.id));
    }
    produced.store(true, Ordering::SeqCst);

    let mut handed = Vec::with_capacity(tasks);
    let mut failed_acks = 0;
    while let Some(done) = workers.join_next().await {
        let report = done.expect("a claimer panicked");
        handed.extend(report.handed);
        failed_acks += report.failed_acks;
    }

    let total = handed.len();
    handed.sort_unstable();
    let twice: Vec<TaskId> = handed
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .take(10)
        .collect();
    assert!(twice.is_empty(), "tasks handed out twice, e.g. {twice:?}");
    created.sort_unstable();
    assert_eq!(
        total,
        created.len(),
        "{tasks} tasks enqueued, {total} handed out"
    );
    assert!(
        handed == created,
        "the tasks handed out are not the tasks enqueued"
    );
    assert_eq!(failed_acks, 0, "acks of held leases failed");
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 0, "queue drained");
    assert!(list_all(&fx, ListRequest::new(q)).await.is_empty());
}

/// One racing worker.
struct Claimer {
    store: Arc<dyn Store>,
    queue: QueueName,
    worker: String,
    produced: Arc<AtomicBool>,
    claimed: Arc<AtomicUsize>,
    tasks: usize,
}

/// What one worker saw.
struct Report {
    handed: Vec<TaskId>,
    failed_acks: usize,
}

impl Claimer {
    async fn run(self) -> Report {
        let mut report = Report {
            handed: Vec::new(),
            failed_acks: 0,
        };
        let mut idle = 0;
        while self.claimed.load(Ordering::SeqCst) < self.tasks && idle < IDLE_CLAIMS {
            let req = ClaimRequest::new(self.queue.clone(), self.worker.clone())
                .max(CLAIM_BATCH)
                .wait(CLAIM_WAIT);
            let got = self.store.claim(req).await.expect("claim");
            if got.is_empty() {
                if self.produced.load(Ordering::SeqCst) {
                    idle += 1;
                }
                continue;
            }
            idle = 0;
            self.claimed.fetch_add(got.len(), Ordering::SeqCst);
            let acks = got.iter().map(|t| (t.id, token(t))).collect();
            let results = self.store.ack_many(acks).await.expect("ack_many");
            report.failed_acks += results.iter().filter(|r| r.is_err()).count();
            report.handed.extend(got.iter().map(|t| t.id));
        }
        report
    }
}
