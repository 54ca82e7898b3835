//! Redis as the "reliable queue" users build on it: producers `LPUSH` onto
//! one list, each consumer `BLMOVE`s tasks from its tail into a processing
//! list of its own, hands them to the sink, and acknowledges by `LREM`ing
//! them from that processing list. A consumer that dies leaves its tasks in
//! its processing list instead of losing them.
//!
//! Durability: on connect the adapter turns on the append-only file with
//! `appendfsync always` (`CONFIG SET`, on a server started with
//! `appendonly no`) and waits until the initial AOF rewrite has finished,
//! so every write command, the consumers' moves and acks included, is
//! fsync'ed before Redis replies. The values are read back into
//! `settings()`.
//!
//! Batches: a batched enqueue is one `LPUSH` with every value. A consumer
//! pipelines `BLMOVE` (100 ms timeout, so it notices `stop`) with `LLEN`,
//! then, if a backlog is left, one pipeline of up to `batch - 1` `LMOVE`s;
//! the ack is one pipeline of `LREM`s.

use std::time::{Duration, Instant};

use anyhow::Context;
use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use redis::io::tcp::TcpSettings;
use redis::{AsyncConnectionConfig, Client, IntoConnectionInfo};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::sink::Sink;
use crate::system::{Producer, System, QUEUE};

/// How long a consumer's `BLMOVE` blocks on an empty queue: short, so
/// consumers notice `stop` between two calls.
const BLOCK_SECS: f64 = 0.1;

/// Longest wait for Redis to finish the AOF rewrite that turning
/// `appendonly` on starts.
const AOF_READY: Duration = Duration::from_secs(120);

pub struct RedisQueue {
    client: Client,
    admin: MultiplexedConnection,
    settings: String,
}

impl RedisQueue {
    pub async fn connect(cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        // TCP_NODELAY is off by default in this client; without it a lone
        // command waited ~4 ms in the kernel (Nagle against delayed ACKs),
        // a tenth of the single-client rate.
        let info = cfg
            .redis
            .as_str()
            .into_connection_info()
            .with_context(|| format!("bad Redis URL {}", cfg.redis))?
            .set_tcp_settings(TcpSettings::default().set_nodelay(true));
        let client = Client::open(info).context("bad Redis connection settings")?;
        let mut admin = open(&client).await?;
        // fsync policy first, so the AOF is never on with a weaker one.
        config_set(&mut admin, "appendfsync", "always").await?;
        config_set(&mut admin, "appendonly", "yes").await?;
        wait_for_aof(&mut admin).await?;
        let appendonly = config_get(&mut admin, "appendonly").await?;
        let appendfsync = config_get(&mut admin, "appendfsync").await?;
        anyhow::ensure!(
            appendonly == "yes" && appendfsync == "always",
            "Redis kept appendonly={appendonly} appendfsync={appendfsync}"
        );
        let settings = format!(
            "appendonly={appendonly}, appendfsync={appendfsync} (AOF fsync'ed before every reply; \
             set by CONFIG SET at connect); LPUSH, one per batch; consumers BLMOVE ({} ms) + LLEN, \
             then pipelined LMOVEs up to the batch into a per-consumer processing list, sink, \
             then one pipeline of LREMs as the ack; one connection per producer and per consumer",
            (BLOCK_SECS * 1000.0) as u64
        );
        Ok(Box::new(RedisQueue {
            client,
            admin,
            settings,
        }))
    }
}

#[async_trait]
impl System for RedisQueue {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn settings(&self) -> String {
        self.settings.clone()
    }

    /// Deletes the queue and every consumer's processing list.
    async fn reset(&self) -> anyhow::Result<()> {
        let mut conn = self.admin.clone();
        let mut keys = vec![QUEUE.to_string()];
        let pattern = format!("{}*", processing_list(""));
        let mut cursor = 0u64;
        loop {
            let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .context("Redis SCAN for processing lists failed")?;
            keys.extend(found);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        redis::cmd("DEL")
            .arg(&keys)
            .exec_async(&mut conn)
            .await
            .context("Redis DEL of the queue failed")?;
        Ok(())
    }

    async fn producer(&self) -> anyhow::Result<Box<dyn Producer>> {
        Ok(Box::new(RedisProducer {
            conn: open(&self.client).await?,
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
            let conn = open(&self.client).await?;
            let (sink, stop) = (sink.clone(), stop.clone());
            set.spawn(consume_one(
                conn,
                processing_list(&i.to_string()),
                batch.max(1),
                sink,
                stop,
            ));
        }
        while let Some(done) = set.join_next().await {
            done??;
        }
        Ok(())
    }
}

/// One consumer: move, run the sink, acknowledge, until `stop`. Never
/// dropped mid-command, so a task is either in the queue, in this
/// consumer's processing list, or done.
async fn consume_one(
    mut conn: MultiplexedConnection,
    processing: String,
    batch: usize,
    sink: Sink,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    while !stop.is_cancelled() {
        let (first, backlog): (Option<Vec<u8>>, u64) = redis::pipe()
            .cmd("BLMOVE")
            .arg(QUEUE)
            .arg(&processing)
            .arg("RIGHT")
            .arg("LEFT")
            .arg(BLOCK_SECS)
            .cmd("LLEN")
            .arg(QUEUE)
            .query_async(&mut conn)
            .await
            .context("Redis BLMOVE failed")?;
        let Some(first) = first else { continue };
        let mut taken = vec![first];
        // Only as many LMOVEs as there is backlog: at a low rate a fixed
        // pipeline of `batch` moves would mostly return nil and load Redis.
        let more = (batch - 1).min(usize::try_from(backlog).unwrap_or(usize::MAX));
        if more > 0 {
            let mut pipe = redis::pipe();
            for _ in 0..more {
                pipe.cmd("LMOVE")
                    .arg(QUEUE)
                    .arg(&processing)
                    .arg("RIGHT")
                    .arg("LEFT");
            }
            let moved: Vec<Option<Vec<u8>>> = pipe
                .query_async(&mut conn)
                .await
                .context("Redis LMOVE failed")?;
            taken.extend(moved.into_iter().flatten());
        }
        sink.done_many(taken.iter().map(|p| &p[..]));
        let mut ack = redis::pipe();
        for payload in &taken {
            // From the tail: the oldest moved is there, so each LREM
            // finds its value at once. Equal payloads are interchangeable.
            ack.cmd("LREM")
                .arg(&processing)
                .arg(-1)
                .arg(&payload[..])
                .ignore();
        }
        ack.exec_async(&mut conn)
            .await
            .context("Redis LREM (ack) failed")?;
    }
    Ok(())
}

struct RedisProducer {
    conn: MultiplexedConnection,
}

#[async_trait]
impl Producer for RedisProducer {
    async fn enqueue_batch(&mut self, payloads: Vec<Vec<u8>>) -> anyhow::Result<()> {
        if payloads.is_empty() {
            return Ok(());
        }
        let mut cmd = redis::cmd("LPUSH");
        cmd.arg(QUEUE);
        for payload in &payloads {
            cmd.arg(&payload[..]);
        }
        cmd.exec_async(&mut self.conn)
            .await
            .context("Redis LPUSH failed")?;
        Ok(())
    }
}

/// The processing list of consumer `id` (`id` empty: the common prefix).
fn processing_list(id: &str) -> String {
    format!("{QUEUE}:processing:{id}")
}

/// A connection of its own. The client's default 500 ms response timeout
/// is too short for an fsync'ed 1000-value LPUSH on a busy disk.
async fn open(client: &Client) -> anyhow::Result<MultiplexedConnection> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(5)))
        .set_response_timeout(Some(Duration::from_secs(60)));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .context("cannot connect to Redis")
}

async fn config_set(
    conn: &mut MultiplexedConnection,
    key: &str,
    value: &str,
) -> anyhow::Result<()> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(key)
        .arg(value)
        .exec_async(conn)
        .await
        .with_context(|| format!("Redis CONFIG SET {key} {value} failed"))
}

async fn config_get(conn: &mut MultiplexedConnection, key: &str) -> anyhow::Result<String> {
    let pair: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(key)
        .query_async(conn)
        .await
        .with_context(|| format!("Redis CONFIG GET {key} failed"))?;
    pair.get(1)
        .cloned()
        .with_context(|| format!("Redis has no setting {key}"))
}

/// Until the AOF is on and no rewrite is running or scheduled: turning
/// `appendonly` on starts a rewrite, and until it ends writes are not yet
/// in an fsync'ed AOF.
async fn wait_for_aof(conn: &mut MultiplexedConnection) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        let info: String = redis::cmd("INFO")
            .arg("persistence")
            .query_async(conn)
            .await
            .context("Redis INFO persistence failed")?;
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
                .unwrap_or("")
                .to_string()
        };
        // A failed rewrite is retried (it stays scheduled), so only give
        // up early when it keeps failing or plain AOF writes fail.
        let failures: u32 = field("aof_rewrites_consecutive_failures")
            .parse()
            .unwrap_or(0);
        anyhow::ensure!(
            failures < 3 && field("aof_last_write_status") != "err",
            "Redis cannot write its AOF (see its log): {info}"
        );
        if field("aof_enabled") == "1"
            && field("aof_rewrite_in_progress") == "0"
            && field("aof_rewrite_scheduled") == "0"
        {
            return Ok(());
        }
        anyhow::ensure!(
            start.elapsed() < AOF_READY,
            "Redis AOF rewrite still running after {} s",
            AOF_READY.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
