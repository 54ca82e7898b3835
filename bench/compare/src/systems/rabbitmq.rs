//! RabbitMQ through AMQP 0-9-1 (`lapin`), with a durable classic queue or a
//! quorum queue (`x-queue-type`), each under a name of its own.
//!
//! Durability: messages are persistent (`delivery_mode` 2) and published
//! with publisher confirms and `mandatory`, so a confirm means the queue
//! took the message and wrote it to disk: a classic queue confirms once its
//! message store has fsync'ed it (or once it was consumed and acked before
//! that), a quorum queue once its Raft log entry is fsync'ed (one node
//! here). A single enqueue waits for its confirm; a batch publishes every
//! message, then waits for every confirm.
//!
//! Consumers use manual acks with a prefetch (`basic.qos`) of the batch
//! size; each takes the deliveries that are ready, at most a batch, runs
//! the sink on them, then acks them all with one `multiple` ack. Every
//! producer and every consumer has a connection and a channel of its own.

use anyhow::Context;
use async_trait::async_trait;
use futures::{FutureExt, StreamExt};
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use lapin::{Confirmation, PublisherConfirm};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::sink::Sink;
use crate::system::{Producer, System, QUEUE};

/// AMQP `delivery_mode` of a persistent message.
const PERSISTENT: u8 = 2;

pub enum Kind {
    Classic,
    Quorum,
}

pub struct Rabbit {
    name: &'static str,
    settings: String,
    url: String,
    queue: String,
    queue_type: &'static str,
    /// For declaring and deleting the queue.
    admin: Channel,
    _admin_conn: Connection,
}

impl Rabbit {
    pub async fn connect(cfg: &Config, kind: Kind) -> anyhow::Result<Box<dyn System>> {
        let (name, queue_type, confirm_when) = match kind {
            Kind::Classic => (
                "rabbitmq-classic",
                "classic",
                "confirm once the message store has fsync'ed the message",
            ),
            Kind::Quorum => (
                "rabbitmq-quorum",
                "quorum",
                "confirm once the Raft log entry is fsync'ed (single node)",
            ),
        };
        let admin_conn = open(&cfg.amqp).await?;
        let admin = admin_conn
            .create_channel()
            .await
            .context("cannot open a RabbitMQ channel")?;
        let rabbit = Rabbit {
            name,
            settings: format!(
                "durable {queue_type} queue, persistent messages (delivery_mode 2), publisher \
                 confirms ({confirm_when}; a batch publishes all, then awaits all confirms); \
                 consumers: manual acks, prefetch = batch, one `multiple` ack per batch of ready \
                 deliveries after the sink; a connection+channel per producer and per consumer"
            ),
            url: cfg.amqp.clone(),
            queue: format!("{QUEUE}-{queue_type}"),
            queue_type,
            admin,
            _admin_conn: admin_conn,
        };
        rabbit.declare().await?;
        Ok(Box::new(rabbit))
    }

    async fn declare(&self) -> anyhow::Result<()> {
        let mut args = FieldTable::default();
        args.insert(
            "x-queue-type".into(),
            AMQPValue::LongString(self.queue_type.into()),
        );
        self.admin
            .queue_declare(
                self.queue.as_str().into(),
                QueueDeclareOptions::durable(),
                args,
            )
            .await
            .with_context(|| format!("cannot declare RabbitMQ queue {}", self.queue))?;
        Ok(())
    }
}

#[async_trait]
impl System for Rabbit {
    fn name(&self) -> &'static str {
        self.name
    }

    fn settings(&self) -> String {
        self.settings.clone()
    }

    /// Deletes and redeclares the queue: unlike a purge, a delete also
    /// drops what a closing consumer hands back late.
    async fn reset(&self) -> anyhow::Result<()> {
        self.admin
            .queue_delete(self.queue.as_str().into(), QueueDeleteOptions::default())
            .await
            .with_context(|| format!("cannot delete RabbitMQ queue {}", self.queue))?;
        self.declare().await
    }

    async fn producer(&self) -> anyhow::Result<Box<dyn Producer>> {
        let conn = open(&self.url).await?;
        let channel = conn
            .create_channel()
            .await
            .context("cannot open a RabbitMQ channel")?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .context("cannot turn on publisher confirms")?;
        Ok(Box::new(RabbitProducer {
            channel,
            _conn: conn,
            queue: self.queue.as_str().into(),
        }))
    }

    async fn consume(
        &self,
        consumers: usize,
        batch: usize,
        sink: Sink,
        stop: CancellationToken,
    ) -> anyhow::Result<()> {
        let batch = batch.clamp(1, usize::from(u16::MAX));
        let mut set = JoinSet::new();
        for i in 0..consumers {
            let conn = open(&self.url).await?;
            let channel = conn
                .create_channel()
                .await
                .context("cannot open a RabbitMQ channel")?;
            channel
                .basic_qos(batch as u16, BasicQosOptions::default())
                .await
                .context("cannot set the prefetch")?;
            let deliveries = channel
                .basic_consume(
                    self.queue.as_str().into(),
                    format!("compare-{i}").into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .with_context(|| format!("cannot consume from {}", self.queue))?;
            let (sink, stop) = (sink.clone(), stop.clone());
            set.spawn(async move {
                let ran = consume_one(deliveries, batch, &sink, &stop).await;
                // Hands the prefetched, unacked deliveries back to the queue.
                let closed = conn.close(200, "done".into()).await;
                ran?;
                closed.context("cannot close the RabbitMQ connection")
            });
        }
        while let Some(done) = set.join_next().await {
            done??;
        }
        Ok(())
    }
}

async fn consume_one(
    mut deliveries: lapin::Consumer,
    batch: usize,
    sink: &Sink,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    loop {
        let first = tokio::select! {
            biased;
            () = stop.cancelled() => return Ok(()),
            next = deliveries.next() => next,
        };
        let first = first
            .context("RabbitMQ cancelled the consumer")?
            .context("RabbitMQ delivery failed")?;
        let mut taken = vec![first];
        // What the prefetch already brought, without waiting for more.
        while taken.len() < batch {
            match deliveries.next().now_or_never() {
                Some(Some(next)) => taken.push(next.context("RabbitMQ delivery failed")?),
                _ => break,
            }
        }
        sink.done_many(taken.iter().map(|d| &d.data[..]));
        if let Some(last) = taken.last() {
            // Deliveries arrive in tag order on the channel, so this acks
            // exactly the ones just handed to the sink.
            let acked = last
                .acker
                .ack(BasicAckOptions { multiple: true })
                .await
                .context("RabbitMQ ack failed")?;
            anyhow::ensure!(acked, "RabbitMQ ack not sent: the channel is gone");
        }
    }
}

struct RabbitProducer {
    channel: Channel,
    _conn: Connection,
    queue: ShortString,
}

impl RabbitProducer {
    async fn publish(&self, payload: &[u8]) -> anyhow::Result<PublisherConfirm> {
        self.channel
            .basic_publish(
                "".into(),
                self.queue.clone(),
                // A message no queue took comes back instead of being
                // confirmed as if stored.
                BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                },
                payload,
                BasicProperties::default().with_delivery_mode(PERSISTENT),
            )
            .await
            .context("RabbitMQ publish failed")
    }
}

#[async_trait]
impl Producer for RabbitProducer {
    async fn enqueue(&mut self, payload: Vec<u8>) -> anyhow::Result<()> {
        let confirm = self.publish(&payload).await?;
        confirmed(confirm.await)
    }

    async fn enqueue_batch(&mut self, payloads: Vec<Vec<u8>>) -> anyhow::Result<()> {
        let mut pending = Vec::with_capacity(payloads.len());
        for payload in &payloads {
            pending.push(self.publish(payload).await?);
        }
        for confirm in pending {
            confirmed(confirm.await)?;
        }
        Ok(())
    }
}

fn confirmed(confirmation: lapin::Result<Confirmation>) -> anyhow::Result<()> {
    match confirmation.context("no publisher confirm")? {
        Confirmation::Ack(None) => Ok(()),
        Confirmation::Ack(Some(returned)) => anyhow::bail!(
            "RabbitMQ returned the message unroutable: {}",
            returned.reply_text
        ),
        Confirmation::Nack(_) => anyhow::bail!("RabbitMQ nacked the message"),
        Confirmation::NotRequested => anyhow::bail!("publisher confirms are off"),
    }
}

async fn open(url: &str) -> anyhow::Result<Connection> {
    Connection::connect(url, ConnectionProperties::default())
        .await
        .with_context(|| format!("cannot connect to RabbitMQ at {url}"))
}
