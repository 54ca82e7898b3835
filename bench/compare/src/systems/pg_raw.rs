//! The hand-written baseline: a SKIP LOCKED queue on PostgreSQL, in the
//! shape of `bench/spool-bench/src/bin/drain/baseline.rs`, as a team
//! would write it without a queue library.
//!
//! Layout: one table in a schema of its own (dropped and recreated on
//! connect) with a partial index over the unleased rows, which is what
//! claims scan, and a second partial index over the leased rows, which is
//! what lease expiry scans.
//!
//! Mapping of the workload:
//! - a producer is one tokio-postgres connection; `enqueue` is one
//!   autocommitted INSERT, `enqueue_batch` one INSERT ... `unnest` of the
//!   payloads, so either returns once PostgreSQL has committed it;
//! - a consumer is one connection running two transactions per batch, as a
//!   worker that must survive a crash does: the claim (UPDATE ... WHERE id IN
//!   (SELECT ... FOR UPDATE SKIP LOCKED LIMIT batch) RETURNING payload) sets a
//!   lease, the payloads go to the sink, then a DELETE of the batch's ids
//!   acknowledges it. A consumer that finds nothing sleeps [`POLL`] (no
//!   LISTEN/NOTIFY: the producers' commits stay plain INSERTs);
//! - leases that expire (a consumer that died mid-batch) return to the
//!   ready set through a small periodic UPDATE each consumer runs.
//!
//! Durability: PostgreSQL defaults, each session sets
//! `synchronous_commit = on`; the settings string reports the server's
//! `synchronous_commit` and `fsync` as read at connect.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use async_trait::async_trait;
use tokio::task::JoinSet;
use tokio_postgres::{Client, NoTls};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::payload;
use crate::sink::Sink;
use crate::system::{Producer, System, QUEUE};

/// Schema of the run, dropped and recreated at connect (`pg_` prefixes
/// are reserved for PostgreSQL's own schemas).
const SCHEMA: &str = "skip_locked_compare";

/// How long a consumer that found the queue empty waits before claiming
/// again: short, so pickup latency stays low, but long enough that idle
/// consumers do not keep a core busy with empty claims.
const POLL: Duration = Duration::from_millis(20);

/// How long a claim holds its batch before another consumer may take it:
/// far above any batch's processing time here.
const LEASE_SECS: f64 = 300.0;

/// Most producer connections: PostgreSQL's `max_connections` is 100 here,
/// so 256 clients share 64 connections, as an application's pool would.
const MAX_PRODUCER_CONNECTIONS: usize = 64;

/// How often each consumer returns expired leases to the ready set.
const REAP_EVERY: Duration = Duration::from_secs(1);

const DDL: &str = "
CREATE SCHEMA {s};
CREATE TABLE {s}.jobs (
    id           bigserial   PRIMARY KEY,
    queue        text        NOT NULL,
    payload      bytea       NOT NULL,
    run_at       timestamptz NOT NULL DEFAULT now(),
    attempts     integer     NOT NULL DEFAULT 0,
    leased_by    text,
    locked_until timestamptz
);
CREATE INDEX jobs_ready ON {s}.jobs (queue, id) WHERE locked_until IS NULL;
CREATE INDEX jobs_leased ON {s}.jobs (locked_until) WHERE locked_until IS NOT NULL;
";

const INSERT_ONE: &str = "INSERT INTO {s}.jobs (queue, payload) VALUES ($1, $2)";

const INSERT_MANY: &str =
    "INSERT INTO {s}.jobs (queue, payload) SELECT $1, p FROM unnest($2::bytea[]) AS p";

/// Transaction 1: lease the oldest due, unleased jobs of the queue.
const CLAIM: &str = "
UPDATE {s}.jobs j
SET locked_until = now() + make_interval(secs => $4), leased_by = $2, attempts = j.attempts + 1
WHERE j.id IN (
    SELECT id FROM {s}.jobs
    WHERE queue = $1 AND locked_until IS NULL AND run_at <= now()
    ORDER BY id
    LIMIT $3
    FOR UPDATE SKIP LOCKED)
RETURNING j.id, j.payload";

/// Transaction 2: the batch is done; delete it if this consumer still holds
/// its lease.
const ACK: &str = "DELETE FROM {s}.jobs WHERE id = ANY($1) AND leased_by = $2";

/// Expired leases go back to the ready set; rows another session is
/// touching are left for the next pass.
const REAP: &str = "
UPDATE {s}.jobs j SET locked_until = NULL, leased_by = NULL
WHERE j.id IN (
    SELECT id FROM {s}.jobs
    WHERE locked_until IS NOT NULL AND locked_until < now()
    FOR UPDATE SKIP LOCKED)";

fn sql(template: &str) -> String {
    template.replace("{s}", SCHEMA)
}

pub struct PgSkipLocked {
    url: String,
    /// Producer connections, made on demand up to the cap, kept for the run.
    producer_conns: tokio::sync::Mutex<Vec<Arc<PgProducer>>>,
    producers_made: AtomicUsize,
    /// Kept for `reset`.
    admin: Client,
    settings: String,
}

impl PgSkipLocked {
    pub async fn connect(cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        let admin = session(&cfg.postgres).await?;
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE;{}",
                sql(DDL)
            ))
            .await
            .context("cannot create the pg-skip-locked schema")?;
        let sync = show(&admin, "synchronous_commit").await?;
        let fsync = show(&admin, "fsync").await?;
        let settings = format!(
            "hand-written SQL over tokio-postgres, one connection per consumer and per \
             producer up to {MAX_PRODUCER_CONNECTIONS} (then shared, pipelined); \
             enqueue = one INSERT (batch = one INSERT ... unnest); claim = UPDATE ... \
             FOR UPDATE SKIP LOCKED with a {LEASE_SECS} s lease, then DELETE in a second \
             transaction; empty consumers poll every {} ms (no LISTEN/NOTIFY); \
             synchronous_commit={sync}, fsync={fsync}",
            POLL.as_millis()
        );
        Ok(Box::new(PgSkipLocked {
            url: cfg.postgres.clone(),
            producer_conns: tokio::sync::Mutex::new(Vec::new()),
            producers_made: AtomicUsize::new(0),
            admin,
            settings,
        }))
    }
}

/// A connection of its own, durable whatever the server's default.
async fn session(url: &str) -> anyhow::Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .with_context(|| format!("cannot connect to PostgreSQL at {url}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("pg-skip-locked: connection ended: {e}");
        }
    });
    client
        .batch_execute("SET synchronous_commit = on")
        .await
        .context("cannot set synchronous_commit")?;
    Ok(client)
}

async fn show(client: &Client, setting: &str) -> anyhow::Result<String> {
    let row = client
        .query_one(&format!("SHOW {setting}"), &[])
        .await
        .with_context(|| format!("cannot read {setting}"))?;
    Ok(row.try_get(0)?)
}

#[async_trait]
impl System for PgSkipLocked {
    fn name(&self) -> &'static str {
        "pg-skip-locked"
    }

    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn pg_schemas(&self) -> &'static [&'static str] {
        &[SCHEMA]
    }

    async fn reset(&self) -> anyhow::Result<()> {
        self.admin
            .batch_execute(&sql("TRUNCATE {s}.jobs"))
            .await
            .context("cannot truncate the pg-skip-locked table")
    }

    async fn producer(&self) -> anyhow::Result<Box<dyn Producer>> {
        let mut conns = self.producer_conns.lock().await;
        let n = self.producers_made.fetch_add(1, Ordering::Relaxed);
        if conns.len() < MAX_PRODUCER_CONNECTIONS {
            let client = session(&self.url).await?;
            let one = client.prepare(&sql(INSERT_ONE)).await?;
            let many = client.prepare(&sql(INSERT_MANY)).await?;
            conns.push(Arc::new(PgProducer { client, one, many }));
        }
        Ok(Box::new(Arc::clone(&conns[n % conns.len()])))
    }

    async fn consume(
        &self,
        consumers: usize,
        batch: usize,
        sink: Sink,
        stop: CancellationToken,
    ) -> anyhow::Result<()> {
        // Lease owners unique to this call, so a later run never acks an
        // earlier run's lease.
        let run = payload::now_nanos();
        let limit = i64::try_from(batch.max(1))?;
        let mut set = JoinSet::new();
        for i in 0..consumers {
            let client = session(&self.url).await?;
            let (sink, stop) = (sink.clone(), stop.clone());
            let owner = format!("compare-{run}-{i}");
            set.spawn(async move { consumer(client, owner, limit, sink, stop).await });
        }
        while let Some(done) = set.join_next().await {
            done??;
        }
        Ok(())
    }
}

async fn consumer(
    client: Client,
    owner: String,
    limit: i64,
    sink: Sink,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let claim = client.prepare(&sql(CLAIM)).await?;
    let ack = client.prepare(&sql(ACK)).await?;
    let reap = client.prepare(&sql(REAP)).await?;
    let mut reaped = Instant::now();
    while !stop.is_cancelled() {
        if reaped.elapsed() >= REAP_EVERY {
            client
                .execute(&reap, &[])
                .await
                .context("cannot return expired leases")?;
            reaped = Instant::now();
        }
        let rows = client
            .query(&claim, &[&QUEUE, &owner, &limit, &LEASE_SECS])
            .await
            .context("claim failed")?;
        if rows.is_empty() {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(POLL) => continue,
            }
        }
        let mut ids = Vec::with_capacity(rows.len());
        let mut payloads = Vec::with_capacity(rows.len());
        for row in &rows {
            ids.push(row.try_get::<_, i64>(0)?);
            payloads.push(row.try_get::<_, &[u8]>(1)?);
        }
        sink.done_many(payloads);
        let gone = client
            .execute(&ack, &[&ids, &owner])
            .await
            .context("ack failed")?;
        anyhow::ensure!(
            gone == ids.len() as u64,
            "acked {gone} of {} jobs: a lease was lost",
            ids.len()
        );
    }
    Ok(())
}

/// A producer connection; beyond [`MAX_PRODUCER_CONNECTIONS`] producers
/// share them, and tokio-postgres pipelines their statements.
struct PgProducer {
    client: Client,
    one: tokio_postgres::Statement,
    many: tokio_postgres::Statement,
}

#[async_trait]
impl Producer for Arc<PgProducer> {
    async fn enqueue(&mut self, payload: Vec<u8>) -> anyhow::Result<()> {
        self.client
            .execute(&self.one, &[&QUEUE, &payload])
            .await
            .context("insert failed")?;
        Ok(())
    }

    async fn enqueue_batch(&mut self, payloads: Vec<Vec<u8>>) -> anyhow::Result<()> {
        self.client
            .execute(&self.many, &[&QUEUE, &payloads])
            .await
            .context("batch insert failed")?;
        Ok(())
    }
}
