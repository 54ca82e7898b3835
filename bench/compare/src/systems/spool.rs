//! Spool four ways, through one adapter over the `Store` trait: the
//! embedded engine in-process, `spool serve` over HTTP and over RESP (a
//! child process on its own data directory), and the PostgreSQL store
//! in-process.
//!
//! Consumers claim batches with a short long-poll and acknowledge each
//! batch with one `ack_many`, as a Spool worker does.

use std::any::Any;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use spool_client::{RemoteStore, RespStore};
use spool_core::store::MAX_CLAIM;
use spool_core::{ClaimRequest, NewTask, Payload, QueueName, Store};
use spool_engine::{Engine, EngineConfig};
use spool_postgres::{PgConfig, PgStore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::sink::Sink;
use crate::system::{Producer, System, QUEUE};

/// Schema of the PostgreSQL store's run, dropped and recreated at start.
const PG_SCHEMA: &str = "spool_compare";

/// Long-poll wait of a consumer's claim: short, so consumers notice `stop`.
const CLAIM_WAIT: Duration = Duration::from_millis(100);

pub struct Spool {
    name: &'static str,
    settings: String,
    store: Arc<dyn Store>,
    queue: QueueName,
    /// What must outlive the store (a temporary directory, a child
    /// process); dropped after it.
    _keep: Box<dyn Any + Send + Sync>,
}

impl Spool {
    pub async fn embedded(_cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        let dir = tempfile::Builder::new()
            .prefix("spool-compare-")
            .tempdir()?;
        let engine = Engine::open(EngineConfig::new(dir.path()))?;
        Self::boxed(
            "spool-embedded",
            "in-process engine, group commit with fdatasync before every reply".into(),
            Arc::new(engine),
            Box::new(dir),
        )
    }

    pub async fn server(cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        let dir = tempfile::Builder::new()
            .prefix("spool-compare-")
            .tempdir()?;
        let server = ServerProcess::start(cfg, dir.path())?;
        let store = RemoteStore::new(server.base.clone(), None)?;
        Self::boxed(
            "spool-server",
            format!(
                "`spool serve` over HTTP/1.1 keep-alive (loopback), embedded engine with fdatasync, at {}",
                server.base
            ),
            Arc::new(store),
            // The process dies before its directory is removed.
            Box::new((server, dir)),
        )
    }

    pub async fn resp(cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        let dir = tempfile::Builder::new()
            .prefix("spool-compare-")
            .tempdir()?;
        let server = ServerProcess::start(cfg, dir.path())?;
        let store = RespStore::new(server.resp.clone(), None);
        Self::boxed(
            "spool-resp",
            format!(
                "`spool serve` over RESP (loopback; spool_client::RespStore, a connection per call \
                 in flight, reused), embedded engine with fdatasync, at {}",
                server.resp
            ),
            Arc::new(store),
            Box::new((server, dir)),
        )
    }

    pub async fn postgres(cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        let (client, connection) = tokio_postgres::connect(&cfg.postgres, tokio_postgres::NoTls)
            .await
            .context("cannot connect to PostgreSQL")?;
        tokio::spawn(connection);
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {PG_SCHEMA} CASCADE"))
            .await?;
        let config = PgConfig {
            schema: PG_SCHEMA.into(),
            pool_size: 32,
            ..PgConfig::default()
        };
        let store = PgStore::connect(&cfg.postgres, config).await?;
        Self::boxed(
            "spool-postgres",
            "PostgreSQL store in-process, SKIP LOCKED claims, synchronous_commit=on".into(),
            Arc::new(store),
            Box::new(()),
        )
    }

    fn boxed(
        name: &'static str,
        settings: String,
        store: Arc<dyn Store>,
        keep: Box<dyn Any + Send + Sync>,
    ) -> anyhow::Result<Box<dyn System>> {
        Ok(Box::new(Spool {
            name,
            settings,
            store,
            queue: QueueName::new(QUEUE)?,
            _keep: keep,
        }))
    }
}

#[async_trait]
impl System for Spool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn settings(&self) -> String {
        self.settings.clone()
    }

    fn pg_schemas(&self) -> &'static [&'static str] {
        if self.name == "spool-postgres" {
            &[PG_SCHEMA]
        } else {
            &[]
        }
    }

    /// Drains the queue through the API: claim the largest batches and
    /// ack them until a claim comes back empty.
    async fn reset(&self) -> anyhow::Result<()> {
        let sink = Sink::new()?;
        let mut drainers = JoinSet::new();
        for i in 0..4 {
            let (store, queue, sink) = (self.store.clone(), self.queue.clone(), sink.clone());
            drainers.spawn(async move {
                let req = ClaimRequest::new(queue, format!("reset-{i}")).max(MAX_CLAIM);
                while claim_and_ack(store.as_ref(), req.clone(), &sink).await? > 0 {}
                anyhow::Ok(())
            });
        }
        while let Some(done) = drainers.join_next().await {
            done??;
        }
        Ok(())
    }

    async fn producer(&self) -> anyhow::Result<Box<dyn Producer>> {
        Ok(Box::new(SpoolProducer {
            store: self.store.clone(),
            queue: self.queue.clone(),
        }))
    }

    async fn consume(
        &self,
        consumers: usize,
        batch: usize,
        sink: Sink,
        stop: CancellationToken,
    ) -> anyhow::Result<()> {
        let mut set = JoinSet::new();
        for i in 0..consumers {
            let (store, sink, stop) = (self.store.clone(), sink.clone(), stop.clone());
            let req = ClaimRequest::new(self.queue.clone(), format!("compare-{i}"))
                .max(u32::try_from(batch)?.min(MAX_CLAIM))
                .wait(CLAIM_WAIT);
            set.spawn(async move {
                while !stop.is_cancelled() {
                    claim_and_ack(store.as_ref(), req.clone(), &sink).await?;
                }
                anyhow::Ok(())
            });
        }
        while let Some(done) = set.join_next().await {
            done??;
        }
        Ok(())
    }
}

/// One claim, the no-op run (the sink) and one `ack_many`; how many tasks
/// it took.
async fn claim_and_ack(store: &dyn Store, req: ClaimRequest, sink: &Sink) -> anyhow::Result<usize> {
    let tasks = store.claim(req).await?;
    sink.done_many(tasks.iter().map(|t| &t.payload.bytes[..]));
    let acks: Vec<_> = tasks
        .iter()
        .filter_map(|t| Some((t.id, t.lease.as_ref()?.token)))
        .collect();
    let n = acks.len();
    if n > 0 {
        for result in store.ack_many(acks).await? {
            result?;
        }
    }
    Ok(n)
}

struct SpoolProducer {
    store: Arc<dyn Store>,
    queue: QueueName,
}

#[async_trait]
impl Producer for SpoolProducer {
    async fn enqueue_batch(&mut self, payloads: Vec<Vec<u8>>) -> anyhow::Result<()> {
        let tasks = payloads
            .into_iter()
            .map(|p| NewTask::new(Payload::binary(p)))
            .collect();
        self.store.enqueue(&self.queue, tasks).await?;
        Ok(())
    }
}

/// A `spool serve` child on port 0 (HTTP and RESP) and a data directory
/// of its own; SIGKILLed on drop.
struct ServerProcess {
    child: Child,
    base: String,
    /// `127.0.0.1:PORT` of the RESP listener.
    resp: String,
}

impl ServerProcess {
    fn start(cfg: &Config, data: &std::path::Path) -> anyhow::Result<ServerProcess> {
        let mut child = Command::new(&cfg.spool_bin)
            .args(["serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            // Room for the large-payload batches.
            .args(["--max-body", &(64u64 << 20).to_string()])
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", cfg.spool_bin.display()))?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        // The HTTP address is logged first, then the RESP one.
        let mut wait_for = |marker: &str| loop {
            let line = lines
                .next()
                .context("spool serve exited before listening")??;
            if let Some(rest) = line.split(marker).nth(1) {
                break anyhow::Ok(
                    rest.split_whitespace()
                        .next()
                        .context("no address")?
                        .to_string(),
                );
            }
        };
        let addr = wait_for("listening on http://")?;
        let resp = wait_for("RESP listening on ")?;
        std::thread::spawn(move || lines.for_each(drop));
        Ok(ServerProcess {
            child,
            base: format!("http://{addr}"),
            resp,
        })
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
