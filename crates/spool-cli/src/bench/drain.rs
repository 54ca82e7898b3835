//! Cleaning up after a workload: claims and acks whatever it left in its
//! queue, untimed, so that every workload starts from the same store.
//!
//! Without it, the 2.3 million tasks the enqueue workloads leave behind stay
//! resident while `cycle` runs, and its figure would measure that backlog
//! (and the checkpoint it triggers) rather than the claim/ack path.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use spool_core::{ClaimRequest, QueueName, Store};
use tokio::task::JoinSet;

use super::budget::Budget;
use super::context::Context;
use super::progress::Progress;
use super::workers::join_all;

/// Empties `queue` of ready tasks; leased ones (a workload stopped by its
/// time limit) are left to their lease.
pub(crate) async fn drain(ctx: &Context, queue: &QueueName) -> anyhow::Result<()> {
    let stats = ctx.store.stats().await.context("stats failed")?;
    let ready = stats
        .iter()
        .find(|q| &q.name == queue)
        .map_or(0, |q| q.counts.ready);
    if ready == 0 {
        return Ok(());
    }
    tracing::info!(%queue, ready, "draining what the workload left");
    let budget = Arc::new(Budget::new(
        ready,
        Duration::from_secs(ctx.args.max_seconds),
    ));
    let progress = Progress::start("(cleanup)", ready, budget.clone());
    let mut drainers = JoinSet::new();
    for i in 0..ctx.args.consumers {
        drainers.spawn(drainer(
            ctx.store.clone(),
            ClaimRequest::new(queue.clone(), format!("bench-drain-{i}")).max(ctx.args.claim_batch),
            budget.clone(),
        ));
    }
    let drained = join_all(drainers, &budget).await;
    progress.finish();
    drained?;
    if budget.done() < ready {
        tracing::warn!(
            %queue,
            left = ready - budget.done(),
            "could not drain the queue in time; the next workload runs beside its tasks"
        );
    }
    Ok(())
}

async fn drainer(
    store: Arc<dyn Store>,
    claim: ClaimRequest,
    budget: Arc<Budget>,
) -> anyhow::Result<()> {
    while !budget.is_over() {
        let tasks = store.claim(claim.clone()).await.context("claim failed")?;
        if tasks.is_empty() {
            return Ok(());
        }
        let n = tasks.len() as u64;
        let acks = tasks
            .into_iter()
            .filter_map(|t| t.lease.map(|lease| (t.id, lease.token)))
            .collect();
        store.ack_many(acks).await.context("ack_many failed")?;
        budget.finish(n);
    }
    Ok(())
}
