//! Workload `enqueue-single`: many concurrent callers, one task per call —
//! what a web application's request handlers do. Group commit is what lets
//! these share one fdatasync.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use spool_core::{QueueName, Store};
use tokio::task::JoinSet;

use super::args::Workload;
use super::budget::Budget;
use super::context::Context;
use super::latency::{merged, Latency};
use super::payload::Payloads;
use super::progress::Progress;
use super::report::WorkloadResult;
use super::workers::join_all;

const WORKLOAD: Workload = Workload::EnqueueSingle;

pub(crate) async fn run(ctx: &Context) -> anyhow::Result<WorkloadResult> {
    let queue = ctx.queue(WORKLOAD)?;
    let budget = ctx.budget(WORKLOAD);
    let target = ctx.args.count(WORKLOAD);
    let progress = Progress::start(WORKLOAD.name(), target, budget.clone());
    let start = Instant::now();
    let mut callers = JoinSet::new();
    for _ in 0..ctx.args.concurrency {
        callers.spawn(caller(
            ctx.store.clone(),
            queue.clone(),
            budget.clone(),
            ctx.payloads.clone(),
        ));
    }
    let calls = join_all(callers, &budget).await;
    let seconds = start.elapsed().as_secs_f64();
    progress.finish();
    let calls = merged(&calls?)?;
    Ok(WorkloadResult::new(
        WORKLOAD.name(),
        target,
        budget.done(),
        seconds,
        vec![calls.summary("enqueue call (1 task)")],
    ))
}

async fn caller(
    store: Arc<dyn Store>,
    queue: QueueName,
    budget: Arc<Budget>,
    payloads: Arc<Payloads>,
) -> anyhow::Result<Latency> {
    let mut calls = Latency::new()?;
    while budget.take(1) == 1 {
        let task = payloads.plain(1);
        let start = Instant::now();
        store
            .enqueue(&queue, task)
            .await
            .context("single enqueue failed")?;
        calls.record(start.elapsed());
        budget.finish(1);
    }
    Ok(calls)
}
