//! Spool's worker runtime: what turns stored tasks into work done.
//!
//! It sees only the [`spool_core::Store`] trait, so the same code runs on the
//! embedded engine, on PostgreSQL and against a server. A map:
//! - [`Job`] (`job`) is a typed payload that names its kind and queue;
//!   [`Client`] (`client`) enqueues jobs and manages schedules, (`batch`)
//!   enqueues a [`Batch`] of jobs that wait for one another, a batch's
//!   callback for its members, in one atomic request, and (`control`)
//!   cancels tasks, pauses queues and sets their claim limits;
//! - [`Handler`] (`handler`) runs one kind: an async function, or a type
//!   with overridable defaults (timeout, [`RetryPolicy`], `on_dead`);
//! - [`Worker`] (`worker/`) runs one pool per queue: an acquisition loop
//!   that long-polls `claim` for as many tasks as it has free slots, one
//!   Tokio task per run under a deadline, batch acks, graceful shutdown;
//! - [`Context`] (`context`) is what a run sees: its task, its deadline,
//!   a cancellation signal (fired at the deadline, and within 100 ms of a
//!   cancel of its task), heartbeats;
//! - [`Scheduler`] (`scheduler`) fires periodic schedules on the store's
//!   clock (`clock`); any number of them on one store make one task per tick;
//! - `metrics` names the `spool_*` metrics; `otel` (feature `otel`) exports
//!   the per-run spans to OpenTelemetry.
//!
//! Invariants: a worker never holds more claimed tasks than it can start at
//! once; every run ends in exactly one report to the store (ack, fail,
//! snooze or release) unless the process dies, in which case the lease
//! expiry makes the task claimable again; the runtime never judges time by
//! its own wall clock, only by the store's, mapped onto the monotonic clock.
//!
//! Delivery is at least once: a handler can run again after a crash, a lost
//! ack or a lease that ran out, so handlers must be idempotent.

mod backoff;
mod batch;
mod client;
mod clock;
mod context;
mod control;
mod error;
mod handler;
mod job;
pub mod metrics;
#[cfg(feature = "otel")]
pub mod otel;
mod periodic;
mod scheduler;
mod worker;

pub use batch::Batch;
pub use client::{Client, EnqueueOptions};
pub use context::Context;
pub use error::{BoxError, EnqueueError, StartError, TaskError, TaskResultExt};
pub use handler::{Backoff, Handler, RetryPolicy};
pub use job::Job;
pub use periodic::PeriodicJob;
pub use scheduler::{Scheduler, SchedulerHandle};
pub use worker::{QueueConfig, ShutdownReport, Worker, WorkerBuilder};
