//! Workload `cycle`: producers enqueue batches while consumers claim
//! batches (long poll), run a no-op, and ack each batch with one
//! `ack_many` — the end-to-end rate of a busy queue.
//!
//! Each batch's payloads carry the instant its enqueue began, so consumers
//! measure pickup latency (enqueue → claim returned), backlog included.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use spool_core::{ClaimRequest, LeaseToken, QueueName, Store, Task, TaskId};
use tokio::task::JoinSet;

use super::args::Workload;
use super::budget::Budget;
use super::context::Context;
use super::latency::{merged, Latency};
use super::payload::Payloads;
use super::produce::{Producer, Stamp};
use super::progress::Progress;
use super::report::WorkloadResult;
use super::workers::join_all;

const WORKLOAD: Workload = Workload::Cycle;

/// Long-poll wait of a claim. Short, so that consumers notice the end of
/// the run soon after the last task; while tasks flow it never elapses.
const CLAIM_WAIT: Duration = Duration::from_millis(100);

/// What a worker of this workload returns.
enum Done {
    Producer,
    Consumer(Box<Consumed>),
}

struct Consumed {
    pickup: Latency,
    acks: Latency,
    last_ack: Option<Instant>,
}

pub(crate) async fn run(ctx: &Context) -> anyhow::Result<WorkloadResult> {
    let queue = ctx.queue(WORKLOAD)?;
    let target = ctx.args.count(WORKLOAD);
    // `produced` hands out tasks to producers and holds the deadline and
    // the stop switch for everyone; `acked` counts what consumers finished.
    let produced = ctx.budget(WORKLOAD);
    let acked = ctx.budget(WORKLOAD);
    let progress = Progress::start(WORKLOAD.name(), target, acked.clone());
    let start = Instant::now();
    let mut workers = JoinSet::new();
    for _ in 0..ctx.args.producers {
        let producer = Producer {
            store: ctx.store.clone(),
            queue: queue.clone(),
            budget: produced.clone(),
            payloads: ctx.payloads.clone(),
            batch: u64::from(ctx.args.batch),
            stamp: Stamp::Yes,
        };
        workers.spawn(async move { producer.run().await.map(|_| Done::Producer) });
    }
    for i in 0..ctx.args.consumers {
        let consumer = Consumer {
            store: ctx.store.clone(),
            queue: queue.clone(),
            worker: format!("bench-consumer-{i}"),
            claim_batch: ctx.args.claim_batch,
            target,
            produced: produced.clone(),
            acked: acked.clone(),
            payloads: ctx.payloads.clone(),
        };
        workers.spawn(async move { consumer.run().await.map(|c| Done::Consumer(Box::new(c))) });
    }
    let done = join_all(workers, &produced).await;
    progress.finish();
    let consumed: Vec<Consumed> = done?
        .into_iter()
        .filter_map(|d| match d {
            Done::Consumer(c) => Some(*c),
            Done::Producer => None,
        })
        .collect();
    // The run ends at the last ack, not when idle consumers notice it.
    let end = consumed.iter().filter_map(|c| c.last_ack).max();
    let seconds = end.map_or(0.0, |end| end.duration_since(start).as_secs_f64());
    let pickup = merged(consumed.iter().map(|c| &c.pickup))?;
    let acks = merged(consumed.iter().map(|c| &c.acks))?;
    Ok(WorkloadResult::new(
        WORKLOAD.name(),
        target,
        acked.done(),
        seconds,
        vec![
            pickup.summary("pickup (enqueue call → claimed)"),
            acks.summary(format!("ack_many call (≤ {} tasks)", ctx.args.claim_batch)),
        ],
    ))
}

struct Consumer {
    store: Arc<dyn Store>,
    queue: QueueName,
    worker: String,
    claim_batch: u32,
    target: u64,
    produced: Arc<Budget>,
    acked: Arc<Budget>,
    payloads: Arc<Payloads>,
}

impl Consumer {
    async fn run(self) -> anyhow::Result<Consumed> {
        let mut done = Consumed {
            pickup: Latency::new()?,
            acks: Latency::new()?,
            last_ack: None,
        };
        while self.acked.done() < self.target && !self.produced.is_over() {
            let request = ClaimRequest::new(self.queue.clone(), self.worker.clone())
                .max(self.claim_batch)
                .wait(CLAIM_WAIT);
            let tasks = self.store.claim(request).await.context("claim failed")?;
            if tasks.is_empty() {
                continue;
            }
            let claimed_at = Instant::now();
            let acks = self.tokens(&tasks, claimed_at, &mut done.pickup)?;
            let n = acks.len() as u64;
            let start = Instant::now();
            let results = self.store.ack_many(acks).await.context("ack_many failed")?;
            let acked_at = Instant::now();
            done.acks.record(acked_at - start);
            if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
                anyhow::bail!("ack of a claimed task failed: {e}");
            }
            self.acked.finish(n);
            done.last_ack = Some(acked_at);
        }
        Ok(done)
    }

    /// The (id, token) pairs to ack; records each task's pickup latency.
    fn tokens(
        &self,
        tasks: &[Task],
        claimed_at: Instant,
        pickup: &mut Latency,
    ) -> anyhow::Result<Vec<(TaskId, LeaseToken)>> {
        tasks
            .iter()
            .map(|task| {
                let enqueued_at = self
                    .payloads
                    .stamp(&task.payload.bytes)
                    .with_context(|| format!("task {} has no enqueue stamp", task.id))?;
                pickup.record(claimed_at.saturating_duration_since(enqueued_at));
                let lease = task
                    .lease
                    .as_ref()
                    .with_context(|| format!("claimed task {} has no lease", task.id))?;
                Ok((task.id, lease.token))
            })
            .collect()
    }
}
