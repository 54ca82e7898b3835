//! The PostgreSQL store: many processes on many machines share one
//! database (feature `postgres`).
//!
//! Connecting creates or migrates the schema (`spool` unless
//! [`PgConfig::schema`] names another), safe when several processes start
//! at once. The database's clock is the store's clock, and enqueue can
//! join a transaction of the caller's ([`PgStore::enqueue_in`]). The
//! store's background tasks run on the tokio runtime that connects.

use std::sync::Arc;

pub use spool_postgres::{ClaimStrategy, PgConfig, PgError, PgStore};

/// Connects to the database at `url` (e.g.
/// `postgres://postgres@127.0.0.1/app`) with the default settings.
pub async fn connect(url: &str) -> Result<Arc<PgStore>, PgError> {
    connect_with(url, PgConfig::default()).await
}

/// Connects with these settings.
pub async fn connect_with(url: &str, config: PgConfig) -> Result<Arc<PgStore>, PgError> {
    PgStore::connect(url, config).await.map(Arc::new)
}
