//! Workload `pickup`: how soon an idle consumer hears of a new task.
//!
//! One consumer long-polls an empty queue. A producer enqueues one task,
//! notes when the enqueue was acknowledged, waits until the consumer
//! reports the claim, pauses, and repeats — so every task meets an idle
//! consumer. The figure is acknowledged → claim returned. Both answers wait
//! for the same fdatasync, so the claim may even return first: that counts
//! as zero.
//!
//! Like a worker runtime's acquisition loop, the consumer claims again at
//! once and leaves the ack to a separate task; acking first would leave
//! the queue without a waiting claim whenever an ack's sync is slow, and
//! measure that instead.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use spool_core::{Ack, ClaimRequest, LeaseToken, QueueName, Store, TaskId};
use tokio::sync::{mpsc, watch};

use super::args::Workload;
use super::budget::Budget;
use super::context::Context;
use super::latency::Latency;
use super::progress::Progress;
use super::report::WorkloadResult;

const WORKLOAD: Workload = Workload::Pickup;

/// Long-poll wait of the consumer's claim; it re-polls when it elapses.
const CLAIM_WAIT: Duration = Duration::from_secs(1);

/// How long the producer waits for a claim before calling the run broken.
const PICKUP_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn run(ctx: &Context) -> anyhow::Result<WorkloadResult> {
    let queue = ctx.queue(WORKLOAD)?;
    let budget = ctx.budget(WORKLOAD);
    let target = ctx.args.count(WORKLOAD);
    let progress = Progress::start(WORKLOAD.name(), target, budget.clone());
    let (claims_tx, mut claims) = mpsc::unbounded_channel();
    let (stop_tx, stop) = watch::channel(false);
    let consumer = tokio::spawn(consume(ctx.store.clone(), queue.clone(), claims_tx, stop));

    let start = Instant::now();
    let produced = produce(ctx, &queue, &budget, &mut claims).await;
    let seconds = start.elapsed().as_secs_f64();
    // The consumer is idle in a long poll now: tell it to stop, and wait so
    // that it does not outlive the workload.
    let _ = stop_tx.send(true);
    let consumed = consumer.await.context("the pickup consumer panicked")?;
    progress.finish();
    // A consumer failure is the cause of whatever the producer saw.
    consumed?;
    let (pickup, enqueue) = produced?;
    Ok(WorkloadResult::new(
        WORKLOAD.name(),
        target,
        budget.done(),
        seconds,
        vec![
            pickup.summary("pickup (enqueue acked → claimed)"),
            enqueue.summary("enqueue call (1 task)"),
        ],
    ))
}

/// Enqueues one task per sample; returns pickup and enqueue latencies.
async fn produce(
    ctx: &Context,
    queue: &QueueName,
    budget: &Budget,
    claims: &mut mpsc::UnboundedReceiver<(TaskId, Instant)>,
) -> anyhow::Result<(Latency, Latency)> {
    let mut pickup = Latency::new()?;
    let mut enqueue = Latency::new()?;
    let pause = Duration::from_millis(ctx.args.pickup_interval_ms);
    while budget.take(1) == 1 {
        let start = Instant::now();
        let ids = ctx
            .store
            .enqueue(queue, ctx.payloads.plain(1))
            .await
            .context("enqueue failed")?;
        let acked_at = Instant::now();
        enqueue.record(acked_at - start);
        let id = ids.first().context("enqueue returned no id")?.id;
        let (claimed, claimed_at) = tokio::time::timeout(PICKUP_TIMEOUT, claims.recv())
            .await
            .with_context(|| format!("task {id} was not claimed within {PICKUP_TIMEOUT:?}"))?
            .context("the pickup consumer stopped")?;
        anyhow::ensure!(
            claimed == id,
            "enqueued task {id} but task {claimed} was claimed"
        );
        pickup.record(claimed_at.saturating_duration_since(acked_at));
        budget.finish(1);
        tokio::time::sleep(pause).await;
    }
    Ok((pickup, enqueue))
}

/// Claims one task at a time and reports when each claim returned; an
/// acker task acks behind it.
async fn consume(
    store: Arc<dyn Store>,
    queue: QueueName,
    claims: mpsc::UnboundedSender<(TaskId, Instant)>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let (acks_tx, acks) = mpsc::unbounded_channel();
    let acker = tokio::spawn(ack_all(store.clone(), acks));
    'claiming: loop {
        let request = ClaimRequest::new(queue.clone(), "bench-pickup").wait(CLAIM_WAIT);
        let tasks = tokio::select! {
            tasks = store.claim(request) => tasks.context("claim failed")?,
            _ = stop.changed() => break 'claiming,
        };
        let claimed_at = Instant::now();
        for task in tasks {
            // A closed channel means the producer gave up; its error wins.
            if claims.send((task.id, claimed_at)).is_err() {
                break 'claiming;
            }
            let lease = task
                .lease
                .with_context(|| format!("claimed task {} has no lease", task.id))?;
            // A closed channel means the acker failed; its error is below.
            if acks_tx.send((task.id, lease.token)).is_err() {
                break 'claiming;
            }
        }
    }
    drop(acks_tx);
    acker.await.context("the pickup acker panicked")?
}

async fn ack_all(
    store: Arc<dyn Store>,
    mut acks: mpsc::UnboundedReceiver<(TaskId, LeaseToken)>,
) -> anyhow::Result<()> {
    while let Some((id, token)) = acks.recv().await {
        store
            .ack(id, token, Ack::Done)
            .await
            .context("ack failed")?;
    }
    Ok(())
}
