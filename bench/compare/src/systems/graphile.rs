//! Graphile Worker's Rust port (`graphile_worker` on crates.io) on the same
//! PostgreSQL, in a schema of its own that is dropped and migrated anew on
//! connect.
//!
//! Mapping of the workload onto its public API:
//! - one task type, [`CompareJob`], whose identifier is the benchmark queue
//!   name and whose JSON payload is the payload as a string (payloads are
//!   printable ASCII). Jobs carry no Graphile `queue_name`: a named Graphile
//!   queue runs its jobs one at a time, which is not what a work queue is;
//! - a producer is a [`WorkerUtils`] over the producers' shared pool;
//!   `enqueue` is `add_job`, `enqueue_batch` is `add_jobs` (one call of the
//!   schema's `add_jobs` function per batch). Both return after the
//!   autocommitted statement has committed;
//! - `consume` runs one Graphile [`Worker`] with `concurrency = consumers`,
//!   configured as the crate's guide configures a throughput-oriented worker:
//!   a local queue that batch-fetches up to `batch` jobs
//!   ([`LocalQueueConfig`]) and completions batched for
//!   [`COMPLETE_BATCH_DELAY`]. The handler passes the payload to the sink and
//!   returns, so the sink runs before the job is completed in PostgreSQL.
//!   New jobs wake the worker through LISTEN/NOTIFY (the crate's default),
//!   with its polling as a fallback. `stop` is the worker's shutdown signal
//!   (OS signal handling off); the grace period only has to let no-op
//!   handlers finish and the completion batch flush;
//! - `reset` truncates the schema's job tables.
//!
//! `add_job`/`add_jobs` notify in the inserting transaction, and
//! PostgreSQL serializes the commits of notifying transactions, WAL flush
//! included: concurrent single enqueues queue behind one another instead of
//! sharing a flush.
//!
//! Durability: PostgreSQL defaults, every pooled connection opens with
//! `synchronous_commit = on`; the settings string reports the server's
//! `synchronous_commit` and `fsync` as read at connect.

use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use graphile_worker::{
    IntoTaskHandlerResult, JobSpec, LocalQueueConfig, TaskHandler, Worker, WorkerContext,
    WorkerOptions, WorkerUtils,
};
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgConnectOptions;
use sqlx::{AssertSqlSafe, PgPool};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::payload;
use crate::sink::Sink;
use crate::system::{Producer, System, QUEUE};
use crate::systems::sqlx_pg::{self, ProducerPool};

/// Graphile Worker's schema for the run.
const SCHEMA: &str = "graphile_compare";

/// How long the worker gathers completions into one statement: the value
/// of the crate guide's throughput example.
const COMPLETE_BATCH_DELAY: Duration = Duration::from_millis(5);

/// How long in-flight handlers may run after `stop`; ours return at once.
const GRACE: Duration = Duration::from_secs(2);

/// Connections the worker's pool may open beyond one per concurrency slot
/// (local queue fetches, completion batches, recovery bookkeeping).
const SPARE_CONNECTIONS: u32 = 4;

/// The one task type: the payload as a JSON string.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
struct CompareJob(String);

impl TaskHandler for CompareJob {
    const IDENTIFIER: &'static str = QUEUE;

    async fn run(self, ctx: WorkerContext) -> impl IntoTaskHandlerResult {
        match ctx.get_ext::<Sink>() {
            Some(sink) => {
                sink.done(self.0.as_bytes());
                Ok(())
            }
            None => Err("the worker has no sink".to_string()),
        }
    }
}

pub struct Graphile {
    options: PgConnectOptions,
    producers: ProducerPool,
    /// For `reset`.
    admin: PgPool,
    settings: String,
}

impl Graphile {
    pub async fn connect(cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        let options = sqlx_pg::options(cfg)?;
        let admin = sqlx_pg::pool(&options, 1).await?;
        // SCHEMA is a constant identifier: nothing outside goes into the SQL.
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"
        )))
        .execute(&admin)
        .await
        .context("cannot drop the graphile-worker schema")?;
        WorkerUtils::new(admin.clone(), SCHEMA)
            .migrate()
            .await
            .context("graphile-worker migrations failed")?;
        let durability = sqlx_pg::durability(&admin).await?;
        let settings = format!(
            "graphile_worker crate (sqlx), schema {SCHEMA}; enqueue = WorkerUtils::add_job \
             (batch = add_jobs, one statement), producers share a pool of up to {} connections; one Worker \
             with concurrency = consumers, local queue of claim-batch size, completions batched \
             every {} ms, LISTEN/NOTIFY wake-ups with its polling as fallback; {durability}",
            sqlx_pg::PRODUCER_CONNECTIONS,
            COMPLETE_BATCH_DELAY.as_millis()
        );
        Ok(Box::new(Graphile {
            producers: ProducerPool::new(options.clone()),
            options,
            admin,
            settings,
        }))
    }
}

#[async_trait]
impl System for Graphile {
    fn name(&self) -> &'static str {
        "graphile-worker"
    }

    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn pg_schemas(&self) -> &'static [&'static str] {
        &[SCHEMA]
    }

    /// Jobs, their retirement marks and named-queue rows go; the registered
    /// task identifier stays, as a deployed schema keeps it.
    async fn reset(&self) -> anyhow::Result<()> {
        sqlx::raw_sql(AssertSqlSafe(format!(
            "TRUNCATE {SCHEMA}._private_jobs, {SCHEMA}._private_job_retirements, \
             {SCHEMA}._private_job_queues"
        )))
        .execute(&self.admin)
        .await
        .context("cannot truncate the graphile-worker job tables")?;
        Ok(())
    }

    async fn producer(&self) -> anyhow::Result<Box<dyn Producer>> {
        let utils = WorkerUtils::new(self.producers.get().await?, SCHEMA);
        Ok(Box::new(GraphileProducer {
            utils,
            spec: JobSpec::default(),
        }))
    }

    async fn consume(
        &self,
        consumers: usize,
        batch: usize,
        sink: Sink,
        stop: CancellationToken,
    ) -> anyhow::Result<()> {
        let slots = consumers.max(1);
        let db = sqlx_pg::pool(&self.options, u32::try_from(slots)? + SPARE_CONNECTIONS).await?;
        let worker: Worker = WorkerOptions::default()
            .schema(SCHEMA)
            .concurrency(slots)
            .pg_pool(db.clone())
            .define_job::<CompareJob>()
            .add_extension(sink)
            .local_queue(LocalQueueConfig::default().with_size(batch.max(1)))
            .complete_job_batch_delay(COMPLETE_BATCH_DELAY)
            .listen_os_shutdown_signals(false)
            .shutdown_signal(stop.cancelled_owned())
            .shutdown_grace_period(GRACE)
            .init()
            .await
            .context("cannot start the graphile worker")?;
        let ran = worker.run().await;
        // The worker's connections go now, not when the pool is dropped,
        // so a following `reset` finds no session in the way.
        drop(worker);
        db.close().await;
        ran.context("graphile worker failed")?;
        Ok(())
    }
}

struct GraphileProducer {
    utils: WorkerUtils,
    spec: JobSpec,
}

#[async_trait]
impl Producer for GraphileProducer {
    async fn enqueue(&mut self, payload: Vec<u8>) -> anyhow::Result<()> {
        let job = CompareJob(payload::as_str(&payload).to_owned());
        self.utils
            .add_job(job, self.spec.clone())
            .await
            .context("add_job failed")?;
        Ok(())
    }

    async fn enqueue_batch(&mut self, payloads: Vec<Vec<u8>>) -> anyhow::Result<()> {
        let jobs: Vec<(CompareJob, &JobSpec)> = payloads
            .iter()
            .map(|p| (CompareJob(payload::as_str(p).to_owned()), &self.spec))
            .collect();
        self.utils
            .add_jobs(&jobs)
            .await
            .context("add_jobs failed")?;
        Ok(())
    }
}
