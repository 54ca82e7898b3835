//! Spool: a durable task queue and scheduler.
//!
//! A web request, a billing run or a health check records a task in
//! milliseconds; workers run it later, in parallel, with retries, deadlines
//! and exactly-once periodic firing. Nothing acknowledged is lost.
//!
//! # The everyday path
//!
//! ```
//! use std::time::Duration;
//!
//! use serde::{Deserialize, Serialize};
//! use spool::{Client, Context, EnqueueOptions, Job, TaskError, Worker};
//!
//! #[derive(Serialize, Deserialize)]
//! struct SendEmail {
//!     to: String,
//! }
//!
//! impl Job for SendEmail {
//!     const KIND: &'static str = "send_email";
//!     const QUEUE: &'static str = "emails";
//! }
//!
//! async fn send_email(ctx: Context, email: SendEmail) -> Result<(), TaskError> {
//!     println!("attempt {}: mailing {}", ctx.attempt(), email.to);
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let store = spool::embedded::open(dir.path())?;
//! let client = Client::new(store.clone());
//! client.enqueue(SendEmail { to: "ada@example.com".into() }).await?;
//! client
//!     .enqueue_with(
//!         SendEmail { to: "alan@example.com".into() },
//!         EnqueueOptions::new().delay(Duration::from_millis(10)).key("welcome:alan"),
//!     )
//!     .await?;
//!
//! let worker = Worker::builder(store).register(send_email).start()?;
//! # while client.store().stats().await?.iter().any(|q| q.counts.total() > 0) {
//! #     tokio::time::sleep(Duration::from_millis(5)).await;
//! # }
//! worker.shutdown(Duration::from_secs(30)).await;
//! # Ok(())
//! # }
//! ```
//!
//! Handlers that need more implement [`Handler`]: a timeout, a
//! [`RetryPolicy`], and `on_dead`, the step that runs when a task has
//! failed for good. A [`TaskError`] says what a failure means: retry (what
//! `?` gives), [`TaskError::permanent`] (dead at once), or
//! [`TaskError::snooze`] (later, without counting the attempt).
//!
//! Periodic work is a [`PeriodicJob`] set with [`Client::put_schedule`] and
//! fired by a [`Scheduler`]; run one in every worker process, the store makes
//! sure each tick fires once.
//!
//! A [`Batch`] ([`Client::batch`]) enqueues jobs in one atomic request:
//! tasks that wait for others of the batch, or members and a callback that
//! runs once they have all ended and reads their results from its
//! [`Context`].
//!
//! [`Client::cancel`] cancels a task in any state; a running one's handler
//! sees [`Context::cancellation`] fire within 100 ms. [`Client::change_queue`]
//! sets a queue's claim limits ([`QueueChange`]: a [`RateLimit`],
//! `max_leased`, `group_concurrency`, `group_rate_limit`) live, for every worker on the store.
//!
//! # Stores
//!
//! Everything above takes an `Arc<dyn Store>`; the features choose which
//! stores are built in:
//! - `embedded` (default): [`embedded::open`], a data directory in this
//!   process — the fastest, no server to run;
//! - `remote`: `remote::connect`, a Spool server over HTTP;
//! - `postgres`: `postgres::connect`, PostgreSQL shared by any number of
//!   processes, with enqueue inside the caller's own transaction;
//! - `otel`: OpenTelemetry export of the per-run spans (module `otel`).
//!
//! # Delivery
//!
//! At least once: a handler may run again after a crash, a lease that ran
//! out or a lost ack. Make handlers idempotent (an idempotency key on the
//! side effect, an upsert, a check first).
//!
//! The examples (`cargo run -p spool --example ...`): `email` (retries and
//! an on_dead step), `health_check` (a one-second schedule with a 500 ms
//! deadline), `app` (one app, embedded or against a server with `--url`).
//! The benchmarks are the `spool-bench` crate's binaries (docs/BENCHMARKS.md).

pub use spool_core as core;
pub use spool_core::{
    Dependencies, EnqueueOutcome, Kind, ParentFailure, QueueChange, QueueName, QueueSettings,
    RateLimit, Schedule, Store, StoreError, Task, TaskId, TaskState, Timestamp,
};
pub use spool_runtime::metrics;
#[cfg(feature = "otel")]
pub use spool_runtime::otel;
pub use spool_runtime::{
    Backoff, Batch, BoxError, Client, Context, EnqueueError, EnqueueOptions, Handler, Job,
    PeriodicJob, QueueConfig, RetryPolicy, Scheduler, SchedulerHandle, ShutdownReport, StartError,
    TaskError, TaskResultExt, Worker, WorkerBuilder,
};

#[cfg(feature = "embedded")]
pub mod embedded;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "remote")]
pub mod remote;
