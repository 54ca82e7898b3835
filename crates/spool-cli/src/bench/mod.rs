//! `spool bench`: a load generator for any store.
//!
//! The map: [`args`] (options, workloads) → [`target`] opens the store (the
//! one place that knows concrete stores) → each workload module runs against
//! `Arc<dyn Store>` ([`enqueue_batch`], [`enqueue_single`], [`cycle`],
//! [`pickup`]), with shared pieces for producers ([`produce`]), work and
//! time limits ([`budget`]), latencies ([`latency`]) and progress
//! ([`progress`]) and CPU use ([`cpu`]); after each, [`drain`] empties its queue so the next
//! starts from the same store → [`report`] prints the table and writes JSON.

mod args;
mod budget;
mod context;
mod cpu;
mod cycle;
mod drain;
mod enqueue_batch;
mod enqueue_single;
mod latency;
mod machine;
mod payload;
mod pickup;
mod produce;
mod progress;
mod report;
mod target;
mod workers;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;

pub(crate) use args::{BenchArgs, ABOUT, EXAMPLES};

use self::args::Workload;
use self::context::Context;
use self::payload::Payloads;
use self::report::{Report, WorkloadResult};

pub(crate) fn run(args: BenchArgs) -> anyhow::Result<()> {
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the system clock is before 1970")?;
    let machine = machine::describe();
    let runtime = crate::runtime::build()?;
    let target = target::open(&args, &runtime)?;
    let ctx = Context {
        store: target.store.clone(),
        nproc: machine.nproc,
        payloads: Arc::new(Payloads::new(args.payload_bytes as usize)),
        run_id: started.as_millis().to_string(),
        args,
    };
    let results = runtime.block_on(run_workloads(&ctx))?;
    drop(runtime);
    let report = Report {
        spool_version: env!("CARGO_PKG_VERSION"),
        command: std::env::args().collect(),
        started_at_unix_ms: started.as_millis(),
        store: target.description.clone(),
        machine,
        parameters: ctx.args,
        results,
    };
    let mut stdout = std::io::stdout().lock();
    report::print_table(&report, &mut stdout).context("cannot print the results")?;
    if let Some(path) = &report.parameters.json {
        report::write_json(&report, path)?;
    }
    Ok(())
}

async fn run_workloads(ctx: &Context) -> anyhow::Result<Vec<WorkloadResult>> {
    let mut results = Vec::new();
    for workload in ctx.args.workload.workloads() {
        tracing::info!(workload = workload.name(), "starting");
        let before = cpu::sample();
        let result = match workload {
            Workload::EnqueueBatch => enqueue_batch::run(ctx).await,
            Workload::EnqueueSingle => enqueue_single::run(ctx).await,
            Workload::Cycle => cycle::run(ctx).await,
            Workload::Pickup => pickup::run(ctx).await,
        };
        let cpu = before.until(&cpu::sample(), ctx.nproc);
        let result = result.with_context(|| format!("workload {} failed", workload.name()))?;
        results.push(result.with_cpu(cpu));
        drain::drain(ctx, &ctx.queue(workload)?)
            .await
            .with_context(|| format!("cleaning up after {} failed", workload.name()))?;
    }
    Ok(results)
}
