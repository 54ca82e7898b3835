//! Workload `enqueue-batch`: producers enqueue batches as fast as the store
//! takes them.

use std::time::Instant;

use tokio::task::JoinSet;

use super::args::Workload;
use super::context::Context;
use super::latency::merged;
use super::produce::{Producer, Stamp};
use super::progress::Progress;
use super::report::WorkloadResult;
use super::workers::join_all;

const WORKLOAD: Workload = Workload::EnqueueBatch;

pub(crate) async fn run(ctx: &Context) -> anyhow::Result<WorkloadResult> {
    let queue = ctx.queue(WORKLOAD)?;
    let budget = ctx.budget(WORKLOAD);
    let target = ctx.args.count(WORKLOAD);
    let progress = Progress::start(WORKLOAD.name(), target, budget.clone());
    let start = Instant::now();
    let mut producers = JoinSet::new();
    for _ in 0..ctx.args.producers {
        let producer = Producer {
            store: ctx.store.clone(),
            queue: queue.clone(),
            budget: budget.clone(),
            payloads: ctx.payloads.clone(),
            batch: u64::from(ctx.args.batch),
            stamp: Stamp::No,
        };
        producers.spawn(producer.run());
    }
    let calls = join_all(producers, &budget).await;
    let seconds = start.elapsed().as_secs_f64();
    progress.finish();
    let calls = merged(&calls?)?;
    Ok(WorkloadResult::new(
        WORKLOAD.name(),
        target,
        budget.done(),
        seconds,
        vec![calls.summary(format!("enqueue call ({} tasks)", ctx.args.batch))],
    ))
}
