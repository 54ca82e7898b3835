//! NATS JetStream (`async-nats`) as a work queue: a stream with WorkQueue
//! retention and file storage on one subject, one durable pull consumer
//! with explicit acks shared by every consumer task.
//!
//! Producers publish and await the PubAck (a batch publishes everything,
//! then awaits every PubAck). Each consumer task pulls at most `batch`
//! messages per request (short expiry), runs the sink on what has arrived,
//! then acks each message. The ack is the plain one, not the double ack
//! that waits for the server: a lost ack only means a redelivery after
//! `ack_wait`, never a lost task, and the consumer's client is flushed
//! before `consume` returns.
//!
//! Durability: a PubAck means the server took the message into its file
//! store, not that it is on disk. The server fsyncs stream files only on
//! its sync interval: 2.10 and later default to 2 minutes unless the
//! server sets `sync_interval: always`; older servers have no such option
//! and a fixed 2 minutes (the local 2.9.10, watched with strace: no fsync
//! for a whole run, then one 120 s after the stream was created). The
//! local server runs with no config file, so an acknowledged task may be
//! lost to an OS crash or a power loss; `settings()` says which server
//! version ran.

use std::time::Duration;

use anyhow::Context as _;
use async_nats::jetstream::consumer::{pull, AckPolicy, PullConsumer};
use async_nats::jetstream::context::DeleteStreamErrorKind;
use async_nats::jetstream::stream::{self, RetentionPolicy, StorageType};
use async_nats::jetstream::{self, ErrorCode};
use async_trait::async_trait;
use futures::{FutureExt, StreamExt};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::sink::Sink;
use crate::system::{Producer, System, QUEUE};

/// Stream names may not contain dots; subjects do.
const SUBJECT: &str = "compare.tasks";
const DURABLE: &str = "compare-workers";

/// How long a pull request waits on the server for messages: short, so an
/// idle consumer task re-requests often.
const PULL_EXPIRES: Duration = Duration::from_millis(500);

/// Unacked messages the consumer may have out at once: far above
/// consumers × batch, so the server never holds deliveries back.
const MAX_ACK_PENDING: i64 = 1 << 20;

pub struct JetStream {
    url: String,
    js: jetstream::Context,
    settings: String,
}

impl JetStream {
    pub async fn connect(cfg: &Config) -> anyhow::Result<Box<dyn System>> {
        let client = open(&cfg.nats).await?;
        let version = client.server_info().version;
        anyhow::ensure!(
            client.server_info().jetstream,
            "JetStream is not enabled on the NATS server at {}",
            cfg.nats
        );
        let js = jetstream::new(client);
        let settings = format!(
            "stream {QUEUE} on {SUBJECT}: WorkQueue retention, file storage, 1 replica; PubAck \
             awaited (a batch publishes all, then awaits all PubAcks); one durable pull consumer, \
             explicit acks, each task pulls ≤ batch with {} ms expiry and acks each message after \
             the sink (plain ack, not double ack); a connection per producer and per consumer task; \
             durability: nats-server {version}, {}",
            PULL_EXPIRES.as_millis(),
            sync_policy(&version)
        );
        Ok(Box::new(JetStream {
            url: cfg.nats.clone(),
            js,
            settings,
        }))
    }
}

/// What the server's file store does about fsync, by version, given that
/// the local server runs with no config file.
fn sync_policy(version: &str) -> &'static str {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) < (2, 10) {
        "which has no sync_interval option: stream files are fsync'ed every 2 min, so a \
         PubAck does not mean fsync'ed"
    } else {
        "no config file, so sync_interval is the 2 min default (not `always`): a PubAck does \
         not mean fsync'ed"
    }
}

#[async_trait]
impl System for JetStream {
    fn name(&self) -> &'static str {
        "nats-jetstream"
    }

    fn settings(&self) -> String {
        self.settings.clone()
    }

    /// Deletes the stream (and with it the consumer) and creates both anew.
    async fn reset(&self) -> anyhow::Result<()> {
        match self.js.delete_stream(QUEUE).await {
            Ok(_) => {}
            Err(e)
                if matches!(e.kind(), DeleteStreamErrorKind::JetStream(ref js)
                if js.error_code() == ErrorCode::STREAM_NOT_FOUND) => {}
            Err(e) => return Err(e).context("cannot delete the JetStream stream"),
        }
        let stream = self
            .js
            .create_stream(stream::Config {
                name: QUEUE.into(),
                subjects: vec![SUBJECT.into()],
                retention: RetentionPolicy::WorkQueue,
                storage: StorageType::File,
                num_replicas: 1,
                ..Default::default()
            })
            .await
            .context("cannot create the JetStream stream")?;
        stream
            .create_consumer(pull::Config {
                durable_name: Some(DURABLE.into()),
                ack_policy: AckPolicy::Explicit,
                max_ack_pending: MAX_ACK_PENDING,
                ..Default::default()
            })
            .await
            .context("cannot create the JetStream consumer")?;
        Ok(())
    }

    async fn producer(&self) -> anyhow::Result<Box<dyn Producer>> {
        Ok(Box::new(NatsProducer {
            js: jetstream::new(open(&self.url).await?),
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
        for _ in 0..consumers {
            let client = open(&self.url).await?;
            let consumer: PullConsumer = jetstream::new(client.clone())
                .get_consumer_from_stream(DURABLE, QUEUE)
                .await
                .context("cannot find the JetStream consumer")?;
            let (sink, stop) = (sink.clone(), stop.clone());
            set.spawn(async move {
                let ran = consume_one(&consumer, batch.max(1), &sink, &stop).await;
                // The acks are buffered publishes: send them before leaving.
                let flushed = client.flush().await;
                ran?;
                flushed.context("cannot flush the NATS acks")
            });
        }
        while let Some(done) = set.join_next().await {
            done??;
        }
        Ok(())
    }
}

async fn consume_one(
    consumer: &PullConsumer,
    batch: usize,
    sink: &Sink,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    while !stop.is_cancelled() {
        let mut messages = consumer
            .batch()
            .max_messages(batch)
            .expires(PULL_EXPIRES)
            .messages()
            .await
            .context("JetStream pull request failed")?;
        loop {
            // The server streams the pull's messages as they come: take
            // the first, then whatever else has already arrived.
            let first = tokio::select! {
                biased;
                () = stop.cancelled() => return Ok(()),
                next = messages.next() => next,
            };
            let Some(first) = first else { break };
            let mut taken = vec![first
                .map_err(|e| anyhow::anyhow!(e))
                .context("JetStream pull failed")?];
            while let Some(Some(next)) = messages.next().now_or_never() {
                taken.push(
                    next.map_err(|e| anyhow::anyhow!(e))
                        .context("JetStream pull failed")?,
                );
            }
            sink.done_many(taken.iter().map(|m| &m.payload[..]));
            for message in &taken {
                message
                    .ack()
                    .await
                    .map_err(|e| anyhow::anyhow!(e))
                    .context("JetStream ack failed")?;
            }
        }
    }
    Ok(())
}

struct NatsProducer {
    js: jetstream::Context,
}

#[async_trait]
impl Producer for NatsProducer {
    async fn enqueue(&mut self, payload: Vec<u8>) -> anyhow::Result<()> {
        self.js
            .publish(SUBJECT, payload.into())
            .await
            .context("JetStream publish failed")?
            .await
            .context("no JetStream PubAck")?;
        Ok(())
    }

    async fn enqueue_batch(&mut self, payloads: Vec<Vec<u8>>) -> anyhow::Result<()> {
        let mut pending = Vec::with_capacity(payloads.len());
        for payload in payloads {
            pending.push(
                self.js
                    .publish(SUBJECT, payload.into())
                    .await
                    .context("JetStream publish failed")?,
            );
        }
        for ack in pending {
            ack.await.context("no JetStream PubAck")?;
        }
        Ok(())
    }
}

async fn open(url: &str) -> anyhow::Result<async_nats::Client> {
    async_nats::connect(url)
        .await
        .with_context(|| format!("cannot connect to NATS at {url}"))
}
