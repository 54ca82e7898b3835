//! A batch producer, shared by the enqueue-batch and cycle workloads: takes
//! batches from the budget and enqueues each with one call until the budget
//! runs out.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use spool_core::{QueueName, Store};

use super::budget::Budget;
use super::latency::Latency;
use super::payload::Payloads;

/// Whether payloads carry their enqueue instant (for pickup latency).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stamp {
    No,
    Yes,
}

pub(crate) struct Producer {
    pub store: Arc<dyn Store>,
    pub queue: QueueName,
    pub budget: Arc<Budget>,
    pub payloads: Arc<Payloads>,
    pub batch: u64,
    pub stamp: Stamp,
}

impl Producer {
    /// Enqueues until the budget is spent; returns the latency of each call.
    pub(crate) async fn run(self) -> anyhow::Result<Latency> {
        let mut calls = Latency::new()?;
        loop {
            let n = self.budget.take(self.batch);
            if n == 0 {
                return Ok(calls);
            }
            // Built before the clock starts: the call is what is timed.
            let tasks = match self.stamp {
                Stamp::No => self.payloads.plain(n),
                Stamp::Yes => self.payloads.stamped(n),
            };
            let start = Instant::now();
            let ids = self
                .store
                .enqueue(&self.queue, tasks)
                .await
                .with_context(|| format!("enqueue of {n} tasks failed"))?;
            calls.record(start.elapsed());
            anyhow::ensure!(
                ids.len() as u64 == n,
                "enqueue of {n} tasks returned {} ids",
                ids.len()
            );
            self.budget.finish(n);
        }
    }
}
