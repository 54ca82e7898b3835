//! What the sqlx-based peers (graphile_worker, apalis) share: how they
//! connect, how their durability is read, and the one pool their
//! producers share.

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use tokio::sync::OnceCell;

use crate::config::Config;

/// Most connections the producers of one system share: PostgreSQL's
/// `max_connections` is 100 here, so 256 concurrent clients share a pool,
/// as an application's request handlers would.
pub const PRODUCER_CONNECTIONS: u32 = 64;

/// The benchmark database, durable whatever the server's default.
pub fn options(cfg: &Config) -> anyhow::Result<PgConnectOptions> {
    Ok(cfg
        .postgres
        .parse::<PgConnectOptions>()
        .context("bad PostgreSQL URL")?
        .options([("synchronous_commit", "on")]))
}

pub async fn pool(options: &PgConnectOptions, connections: u32) -> anyhow::Result<PgPool> {
    PgPoolOptions::new()
        .max_connections(connections)
        .connect_with(options.clone())
        .await
        .context("cannot connect to PostgreSQL")
}

/// The server's durability settings, for the report.
pub async fn durability(admin: &PgPool) -> anyhow::Result<String> {
    let sync: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(admin)
        .await?;
    let fsync: String = sqlx::query_scalar("SHOW fsync").fetch_one(admin).await?;
    Ok(format!("synchronous_commit={sync}, fsync={fsync}"))
}

/// The producers' pool, opened by the first producer; connections open as
/// concurrent calls need them.
#[derive(Debug)]
pub struct ProducerPool {
    options: PgConnectOptions,
    pool: OnceCell<PgPool>,
}

impl ProducerPool {
    pub fn new(options: PgConnectOptions) -> ProducerPool {
        ProducerPool {
            options,
            pool: OnceCell::new(),
        }
    }

    pub async fn get(&self) -> anyhow::Result<PgPool> {
        self.pool
            .get_or_try_init(|| pool(&self.options, PRODUCER_CONNECTIONS))
            .await
            .cloned()
    }
}
