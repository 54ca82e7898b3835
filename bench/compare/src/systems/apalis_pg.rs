//! apalis 1.0 with its PostgreSQL backend (`apalis-postgres`, sqlx
//! underneath) on the same PostgreSQL.
//!
//! The crate's migrations put everything in a schema named `apalis` that
//! cannot be renamed; `PostgresStorage::setup` applies them at connect and
//! `reset` truncates its jobs and workers tables (the benchmark database is
//! the benchmark's own).
//!
//! Mapping of the workload onto its public API:
//! - jobs are `String`s (payloads are printable ASCII), encoded by the
//!   storage's JSON codec into its `bytea` column, in the apalis queue named
//!   after the benchmark queue;
//! - a producer is a `PostgresStorage` over the producers' shared pool;
//!   `enqueue` is `TaskSink::push`, `enqueue_batch` is `TaskSink::push_bulk`,
//!   which the storage writes as one INSERT ... `unnest` in one transaction.
//!   Both return after that transaction has committed;
//! - `consume` runs `consumers` apalis workers, each over a storage of its
//!   own that fetches up to `batch` jobs per transaction
//!   (`Config::batch_size`) and is woken by the crate's LISTEN/NOTIFY
//!   pubsub (one listener connection per worker, fed by the crate's per-row
//!   insert trigger), with a [`FALLBACK_POLL`] interval against missed
//!   wake-ups.
//!   The handler passes the payload to the sink and returns; apalis then
//!   records the completion (its acknowledgement: an UPDATE to `Done`, the
//!   row stays until `reset`), so the sink runs first. Other settings are the
//!   crate's defaults (tasks locked while running, results persisted);
//! - `stop` ends each worker through `Worker::run_until`, which lets
//!   in-flight handlers finish, flushes pending completions and returns
//!   unstarted fetched jobs to the queue.
//!
//! Every insert notifies (the crate's trigger), and PostgreSQL serializes
//! the commits of notifying transactions, WAL flush included: concurrent
//! single enqueues queue behind one another instead of sharing a flush.
//!
//! Durability: PostgreSQL defaults, every pooled connection opens with
//! `synchronous_commit = on`; the settings string reports the server's
//! `synchronous_commit` and `fsync` as read at connect.

use std::time::Duration;

use anyhow::Context;
use apalis::prelude::{BackendExt, BoxDynError, Data, TaskSink, WorkerBuilder, WorkerError};
use apalis_postgres::{Config as QueueConfig, PgConnectOptions, PgPool, PostgresStorage};
use async_trait::async_trait;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::payload;
use crate::sink::Sink;
use crate::system::{Producer, System, QUEUE};
use crate::systems::sqlx_pg::{self, ProducerPool};

/// How often an idle worker fetches even without a notification: the
/// pubsub wake-up can be consumed while a fetch that cannot yet see the new
/// row is in flight, and the next wake-up would otherwise be the heartbeat.
const FALLBACK_POLL: Duration = Duration::from_millis(100);

pub struct ApalisPg {
    options: PgConnectOptions,
    producers: ProducerPool,
    /// For `reset`.
    admin: PgPool,
    settings: String,
}

impl ApalisPg {
    pub async fn connect(cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        let options = sqlx_pg::options(cfg)?;
        let admin = sqlx_pg::pool(&options, 1).await?;
        PostgresStorage::setup(&admin)
            .await
            .context("apalis-postgres migrations failed")?;
        let durability = sqlx_pg::durability(&admin).await?;
        let settings = format!(
            "apalis 1.0 + apalis-postgres (sqlx), schema apalis; enqueue = TaskSink::push \
             (batch = push_bulk, one INSERT ... unnest), producers share a pool of up to {} connections; \
             one worker per consumer, each fetching up to claim-batch jobs per transaction, \
             completions flushed per batch as UPDATEs to Done (rows kept), defaults otherwise; \
             LISTEN/NOTIFY pubsub wake-ups with a {} ms fallback poll; {durability}",
            sqlx_pg::PRODUCER_CONNECTIONS,
            FALLBACK_POLL.as_millis()
        );
        Ok(Box::new(ApalisPg {
            producers: ProducerPool::new(options.clone()),
            options,
            admin,
            settings,
        }))
    }

    fn storage(&self, pool: &PgPool, batch: usize) -> PostgresStorage<String> {
        PostgresStorage::new(pool)
            .with_config(QueueConfig::default().queue(QUEUE).batch_size(batch.max(1)))
    }
}

/// The job handler: the sink sees the payload before apalis completes it.
async fn handle(job: String, sink: Data<Sink>) -> Result<(), BoxDynError> {
    sink.done(job.as_bytes());
    Ok(())
}

#[async_trait]
impl System for ApalisPg {
    fn name(&self) -> &'static str {
        "apalis-postgres"
    }

    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn pg_schemas(&self) -> &'static [&'static str] {
        &["apalis"]
    }

    async fn reset(&self) -> anyhow::Result<()> {
        sqlx::raw_sql("TRUNCATE apalis.jobs, apalis.workers")
            .execute(&self.admin)
            .await
            .context("cannot truncate the apalis tables")?;
        Ok(())
    }

    async fn producer(&self) -> anyhow::Result<Box<dyn Producer>> {
        let storage = self.storage(&self.producers.get().await?, 1);
        Ok(Box::new(ApalisProducer { storage }))
    }

    async fn consume(
        &self,
        consumers: usize,
        batch: usize,
        sink: Sink,
        stop: CancellationToken,
    ) -> anyhow::Result<()> {
        let workers = consumers.max(1);
        // Each worker's pubsub listener keeps one pooled connection for the
        // whole run; the worker takes another only for a fetch, a
        // completion flush or a heartbeat.
        let db = sqlx_pg::pool(&self.options, 2 * u32::try_from(workers)?).await?;
        // apalis keeps a session advisory lock per worker name on a pooled
        // connection: names unique to this call never meet an old lock.
        let run = payload::now_nanos();
        // Stops every worker on `stop`, or on the first worker's failure
        // without touching the caller's token.
        let halt = stop.child_token();
        let mut set = JoinSet::new();
        for i in 0..workers {
            let backend = self
                .storage(&db, batch)
                .with_pubsub()
                .poll_with_interval(FALLBACK_POLL);
            let worker = WorkerBuilder::new(format!("compare-{run}-{i}"))
                .backend(backend)
                .data(sink.clone())
                .build(handle);
            let halt = halt.clone();
            set.spawn(async move {
                worker
                    .run_until(async move {
                        halt.cancelled().await;
                        Ok::<(), WorkerError>(())
                    })
                    .await
            });
        }
        let mut failed = None;
        while let Some(done) = set.join_next().await {
            match done {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    // One broken worker ends the run instead of leaving the
                    // others to a drain that can no longer complete.
                    halt.cancel();
                    failed.get_or_insert(anyhow::Error::new(e).context("apalis worker failed"));
                }
                Err(e) => {
                    halt.cancel();
                    failed.get_or_insert(anyhow::Error::new(e).context("apalis worker panicked"));
                }
            }
        }
        db.close().await;
        failed.map_or(Ok(()), Err)
    }
}

struct ApalisProducer {
    storage: PostgresStorage<String>,
}

#[async_trait]
impl Producer for ApalisProducer {
    async fn enqueue(&mut self, payload: Vec<u8>) -> anyhow::Result<()> {
        self.storage
            .push(payload::as_str(&payload).to_owned())
            .await
            .context("push failed")?;
        Ok(())
    }

    async fn enqueue_batch(&mut self, payloads: Vec<Vec<u8>>) -> anyhow::Result<()> {
        let jobs = payloads
            .iter()
            .map(|p| payload::as_str(p).to_owned())
            .collect();
        self.storage
            .push_bulk(jobs)
            .await
            .context("push_bulk failed")?;
        Ok(())
    }
}
