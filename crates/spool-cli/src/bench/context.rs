//! What every workload gets: the store, the options, payloads, and queue
//! names of its own.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use spool_core::{QueueName, Store};

use super::args::{BenchArgs, Workload};
use super::budget::Budget;
use super::payload::Payloads;

pub(crate) struct Context {
    pub store: Arc<dyn Store>,
    pub args: BenchArgs,
    pub payloads: Arc<Payloads>,
    /// CPUs of the machine, to scale its CPU use.
    pub nproc: usize,
    /// Unique per run, so that a kept data directory's leftovers from an
    /// earlier run never reach this run's consumers.
    pub run_id: String,
}

impl Context {
    /// The queue `workload` uses in this run.
    pub(crate) fn queue(&self, workload: Workload) -> anyhow::Result<QueueName> {
        let name = format!("bench-{}.{}", self.run_id, workload.name());
        QueueName::new(name.as_str()).with_context(|| format!("bad queue name {name:?}"))
    }

    /// A fresh budget for `workload`: its task count and time limit.
    pub(crate) fn budget(&self, workload: Workload) -> Arc<Budget> {
        Arc::new(Budget::new(
            self.args.count(workload),
            Duration::from_secs(self.args.max_seconds),
        ))
    }
}
