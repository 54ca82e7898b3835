//! The systems under test, by name. Each adapter lives in a file of its
//! own and states its durability settings in `System::settings`.

mod apalis_pg;
mod awa;
mod graphile;
mod nats;
mod pg_raw;
mod rabbitmq;
mod redis;
mod spool;
mod sqlx_pg;

use crate::config::Config;
use crate::system::System;

/// Connects to (or starts) the named system and checks it is usable.
/// Every adapter's constructor returns the boxed system itself.
pub async fn connect(name: &str, cfg: &Config) -> anyhow::Result<Box<dyn System>> {
    Ok(match name {
        "spool-embedded" => spool::Spool::embedded(cfg).await?,
        "spool-server" => spool::Spool::server(cfg).await?,
        "spool-resp" => spool::Spool::resp(cfg).await?,
        "spool-postgres" => spool::Spool::postgres(cfg).await?,
        "pg-skip-locked" => pg_raw::PgSkipLocked::connect(cfg).await?,
        "redis" => redis::RedisQueue::connect(cfg).await?,
        "rabbitmq-classic" => rabbitmq::Rabbit::connect(cfg, rabbitmq::Kind::Classic).await?,
        "rabbitmq-quorum" => rabbitmq::Rabbit::connect(cfg, rabbitmq::Kind::Quorum).await?,
        "nats-jetstream" => nats::JetStream::connect(cfg).await?,
        "graphile-worker" => graphile::Graphile::connect(cfg).await?,
        "apalis-postgres" => apalis_pg::ApalisPg::connect(cfg).await?,
        "awa" => awa::Awa::connect(cfg).await?,
        other => anyhow::bail!("unknown system {other:?}"),
    })
}
