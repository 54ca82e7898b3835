//! awa (`awa` on crates.io, 0.6) on the same PostgreSQL: its migrations
//! and its queue storage (append-only ready/done partitions, lease and
//! receipt rings rotated by TRUNCATE) in the schema `awa`, dropped and
//! installed anew on connect.
//!
//! Mapping of the workload onto its public API:
//! - one job kind, [`CompareJob`], whose kind string is the benchmark queue
//!   name and whose JSON args carry the payload as a string (payloads are
//!   printable ASCII); every job goes to the awa queue of the same name;
//! - a producer is the producers' shared sqlx pool; `enqueue` is
//!   `awa::insert_with` (one autocommitted `awa.insert_job_compat` call,
//!   which routes to the active queue storage), `enqueue_batch` is
//!   `awa::insert_many` (one statement). Both return after the commit;
//! - `consume` runs awa's own worker runtime, as a user would: one
//!   [`awa::Client`] with the queue at `max_workers = consumers` and
//!   `claim_batch_size = batch`, a handler registered for [`CompareJob`]
//!   that passes the payload to the sink and returns
//!   `JobResult::Completed`, so the sink runs before awa's completion
//!   batcher records the job done. The dispatcher is woken by awa's
//!   LISTEN/NOTIFY, with its `poll_interval` (default 200 ms) as fallback.
//!   Jobs have `deadline_duration = 0`, which puts claims on the receipt
//!   ring's short path (what awa's own throughput benchmark configures);
//!   rotation cadences, heartbeat and maintenance are the crate's defaults.
//!   `stop` shuts the client down with a short grace period;
//! - `reset` is `QueueStorage::reset` (TRUNCATE of the queue-storage tables).
//!
//! The queue storage is installed at connect with
//! `QueueStorage::install` (prepare the schema, mark it the active engine),
//! the step awa's runtime takes itself on a fresh database; doing it before
//! the first insert means producers that start before any worker already
//! write to queue storage.
//!
//! Durability: PostgreSQL defaults, every pooled connection opens with
//! `synchronous_commit = on`; the settings string reports the server's
//! `synchronous_commit` and `fsync` as read at connect.

use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use awa::{InsertOpts, JobArgs, JobResult, QueueConfig, QueueStorage, QueueStorageConfig};
use serde::{Deserialize, Serialize};
use sqlx08::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx08::PgPool;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::payload;
use crate::sink::Sink;
use crate::system::{Producer, System, QUEUE};
use crate::systems::sqlx_pg::PRODUCER_CONNECTIONS;

/// awa's schema: its migrations' and its default queue storage's.
const SCHEMA: &str = "awa";

/// How long in-flight handlers may run after `stop`; ours return at once.
const GRACE: Duration = Duration::from_secs(2);

/// Connections the worker's pool may open beyond one per worker slot
/// (dispatcher, LISTEN, completion batcher, heartbeat, maintenance).
const SPARE_CONNECTIONS: u32 = 8;

/// The one job kind: the payload as a JSON string field.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct CompareJob {
    payload: String,
}

impl JobArgs for CompareJob {
    fn kind() -> &'static str {
        QUEUE
    }
}

pub struct Awa {
    options: PgConnectOptions,
    producers: OnceCell<PgPool>,
    /// For `reset`.
    admin: PgPool,
    store: QueueStorage,
    settings: String,
}

impl Awa {
    pub async fn connect(cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        let options = cfg
            .postgres
            .parse::<PgConnectOptions>()
            .context("bad PostgreSQL URL")?
            .options([("synchronous_commit", "on")]);
        let admin = pool(&options, 2).await?;
        // SCHEMA is a constant identifier: nothing outside goes into the SQL.
        sqlx08::raw_sql(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
            .execute(&admin)
            .await
            .context("cannot drop the awa schema")?;
        awa::migrations::run(&admin)
            .await
            .context("awa migrations failed")?;
        let store = QueueStorage::new(QueueStorageConfig::default())?;
        store
            .install(&admin)
            .await
            .context("cannot install awa's queue storage")?;
        let sync: String = sqlx08::query_scalar("SHOW synchronous_commit")
            .fetch_one(&admin)
            .await?;
        let fsync: String = sqlx08::query_scalar("SHOW fsync").fetch_one(&admin).await?;
        let settings = format!(
            "awa 0.6 (sqlx), queue storage in schema {SCHEMA}; enqueue = awa::insert_with \
             (batch = insert_many, one statement), producers share a pool of up to \
             {PRODUCER_CONNECTIONS} connections; one awa Client with max_workers = consumers, \
             claim_batch_size = claim batch, deadline_duration = 0 (receipt ring), \
             LISTEN/NOTIFY wake-ups with its 200 ms poll as fallback, completions batched by \
             the runtime; synchronous_commit={sync}, fsync={fsync}"
        );
        Ok(Box::new(Awa {
            options,
            producers: OnceCell::new(),
            admin,
            store,
            settings,
        }))
    }
}

async fn pool(options: &PgConnectOptions, connections: u32) -> anyhow::Result<PgPool> {
    PgPoolOptions::new()
        .max_connections(connections)
        .connect_with(options.clone())
        .await
        .context("cannot connect to PostgreSQL")
}

#[async_trait]
impl System for Awa {
    fn name(&self) -> &'static str {
        "awa"
    }

    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn pg_schemas(&self) -> &'static [&'static str] {
        &[SCHEMA]
    }

    async fn reset(&self) -> anyhow::Result<()> {
        self.store
            .reset(&self.admin)
            .await
            .context("cannot reset awa's queue storage")
    }

    async fn producer(&self) -> anyhow::Result<Box<dyn Producer>> {
        let pool = self
            .producers
            .get_or_try_init(|| pool(&self.options, PRODUCER_CONNECTIONS))
            .await?
            .clone();
        Ok(Box::new(AwaProducer { pool }))
    }

    async fn consume(
        &self,
        consumers: usize,
        batch: usize,
        sink: Sink,
        stop: CancellationToken,
    ) -> anyhow::Result<()> {
        let workers = u32::try_from(consumers.max(1))?;
        let db = pool(&self.options, workers + SPARE_CONNECTIONS).await?;
        let queue = QueueConfig {
            max_workers: workers,
            claim_batch_size: batch.max(1),
            deadline_duration: Duration::ZERO,
            ..QueueConfig::default()
        };
        let client = awa::Client::builder(db.clone())
            .queue(QUEUE, queue)
            .register::<CompareJob, _, _>(move |job, _ctx| {
                let sink = sink.clone();
                async move {
                    sink.done(job.payload.as_bytes());
                    Ok(JobResult::Completed)
                }
            })
            .build()
            .context("cannot build the awa client")?;
        client
            .start()
            .await
            .context("cannot start the awa client")?;
        stop.cancelled().await;
        client.shutdown(GRACE).await;
        // The worker's connections go now, not when the pool is dropped,
        // so a following `reset` finds no session in the way.
        drop(client);
        db.close().await;
        Ok(())
    }
}

struct AwaProducer {
    pool: PgPool,
}

fn opts() -> InsertOpts {
    InsertOpts {
        queue: QUEUE.into(),
        ..InsertOpts::default()
    }
}

#[async_trait]
impl Producer for AwaProducer {
    async fn enqueue(&mut self, payload: Vec<u8>) -> anyhow::Result<()> {
        let job = CompareJob {
            payload: payload::as_str(&payload).to_owned(),
        };
        awa::insert_with(&self.pool, &job, opts())
            .await
            .context("awa insert failed")?;
        Ok(())
    }

    async fn enqueue_batch(&mut self, payloads: Vec<Vec<u8>>) -> anyhow::Result<()> {
        let jobs = payloads
            .iter()
            .map(|p| {
                let job = CompareJob {
                    payload: payload::as_str(p).to_owned(),
                };
                awa::model::insert::params_with(&job, opts())
            })
            .collect::<Result<Vec<_>, _>>()?;
        awa::insert_many(&self.pool, &jobs)
            .await
            .context("awa insert_many failed")?;
        Ok(())
    }
}
