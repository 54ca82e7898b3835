//! What every system under test provides, so that one workload code path
//! drives them all: producers that enqueue durably, and consumers that take
//! tasks, hand each payload to the [`Sink`], and acknowledge it.
//!
//! Invariants every adapter keeps:
//! - `enqueue`/`enqueue_batch` return only once the system reports the task
//!   durable (fsync'ed or committed, as its settings state);
//! - a consumer calls [`Sink::done`] for a task before acknowledging it and
//!   never for a task it has not received;
//! - `consume` returns soon after `stop` is cancelled, leaving nothing
//!   running.

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::sink::Sink;

/// The queue every adapter uses; `reset` empties it.
pub const QUEUE: &str = "compare";

#[async_trait]
pub trait System: Send + Sync {
    /// Stable short name for tables, JSON and the chart ("redis", ...).
    fn name(&self) -> &'static str;

    /// The durability and delivery settings in force, for the report.
    fn settings(&self) -> String;

    /// The PostgreSQL schemas holding the system's tables, for the held
    /// horizon's readers and its size and dead-tuple samples; empty for
    /// systems that keep nothing in PostgreSQL.
    fn pg_schemas(&self) -> &'static [&'static str] {
        &[]
    }

    /// Creates the benchmark queue if needed and removes every task in it.
    async fn reset(&self) -> anyhow::Result<()>;

    /// One concurrent client with a connection of its own.
    async fn producer(&self) -> anyhow::Result<Box<dyn Producer>>;

    /// Runs `consumers` concurrent consumers until `stop` is cancelled.
    /// Each takes tasks (batches where the system has them, at most
    /// `batch`), passes every payload to `sink`, then acknowledges.
    async fn consume(
        &self,
        consumers: usize,
        batch: usize,
        sink: Sink,
        stop: CancellationToken,
    ) -> anyhow::Result<()>;
}

#[async_trait]
pub trait Producer: Send {
    /// Enqueues one task; returns once it is durable. By default a batch
    /// of one; systems with a cheaper single path override it.
    async fn enqueue(&mut self, payload: Vec<u8>) -> anyhow::Result<()> {
        self.enqueue_batch(vec![payload]).await
    }

    /// Enqueues many tasks in as few round trips as the system allows;
    /// returns once all are durable.
    async fn enqueue_batch(&mut self, payloads: Vec<Vec<u8>>) -> anyhow::Result<()>;
}
