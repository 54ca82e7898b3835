//! Errors: [`PgError`] for connecting and migrating, and the mapping of
//! database and pool failures onto [`StoreError`] for operations.
//!
//! Operations answer `unavailable` when the database cannot be reached or
//! asks to be retried (connection loss, shutdown, too many connections,
//! serialization failure, deadlock), and `internal` for anything else the
//! database refuses: that is a bug here, never the caller's mistake.

use std::error::Error as _;

use deadpool_postgres::PoolError;
use spool_core::StoreError;

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// A setting of [`PgConfig`](crate::PgConfig) is out of range (an
    /// invalid schema name, a zero pool size or interval) or its TLS root
    /// certificate cannot be read; code `config`.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The connection string does not parse as a `postgres://` URL or
    /// key=value string; code `config`.
    #[error("invalid database URL: {0}")]
    Url(#[source] tokio_postgres::Error),
    /// The connection pool could not be built from the settings; code
    /// `connect`.
    #[error("cannot build the connection pool: {0}")]
    Pool(#[from] deadpool_postgres::BuildError),
    /// The first connection failed (unreachable server, refused login, TLS
    /// handshake, `connect_timeout` passed); code `connect`.
    #[error("cannot connect to PostgreSQL: {0}")]
    Connect(String),
    /// A step of the migration failed; its transaction is rolled back, so
    /// the schema is as it was. Code `migrate`.
    #[error("migrating schema {schema}: {source}")]
    Migrate {
        /// The schema being migrated ([`PgConfig::schema`](crate::PgConfig::schema)).
        schema: String,
        /// The error of the statement that failed.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The schema was migrated by a newer Spool than this one: it is left
    /// untouched and this build refuses to use it. Code `schema_too_new`.
    #[error(
        "schema {schema} is at version {found}, newer than this build knows ({known}): \
         upgrade Spool"
    )]
    SchemaTooNew {
        /// The schema refused ([`PgConfig::schema`](crate::PgConfig::schema)).
        schema: String,
        /// The highest migration version recorded in the schema.
        found: i32,
        /// The latest migration version this build has.
        known: i32,
    },
}

impl PgError {
    /// A stable machine-readable code: `config`, `connect`, `migrate` or
    /// `schema_too_new`.
    pub fn code(&self) -> &'static str {
        match self {
            PgError::Config(_) | PgError::Url(_) => "config",
            PgError::Pool(_) | PgError::Connect(_) => "connect",
            PgError::Migrate { .. } => "migrate",
            PgError::SchemaTooNew { .. } => "schema_too_new",
        }
    }
}

/// SQLSTATE classes and codes worth retrying: connection exceptions,
/// insufficient resources, operator intervention (shutdown), serialization
/// failure and deadlock.
fn transient(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || code.starts_with("57P")
        || code == "40001"
        || code == "40P01"
}

/// A failed statement as an operation's error.
pub(crate) fn db(e: tokio_postgres::Error) -> StoreError {
    if let Some(d) = e.as_db_error() {
        if transient(d.code().code()) {
            return StoreError::Unavailable(d.to_string());
        }
        tracing::error!(error = %d, "PostgreSQL refused a statement");
        return StoreError::Internal(d.to_string());
    }
    let io = e
        .source()
        .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
    if e.is_closed() || io {
        return StoreError::Unavailable(e.to_string());
    }
    StoreError::Internal(e.to_string())
}

/// No connection could be had from the pool.
pub(crate) fn pool(e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) => db(e),
        PoolError::Timeout(_) => StoreError::Unavailable("no database connection in time".into()),
        PoolError::Closed => StoreError::Unavailable("the connection pool is closed".into()),
        other => StoreError::Internal(other.to_string()),
    }
}

/// A row that does not hold what the schema promises.
pub(crate) fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("unexpected row: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_sqlstates_are_transient() {
        for c in ["08006", "53300", "57P01", "40001", "40P01"] {
            assert!(transient(c), "{c}");
        }
        for c in ["23505", "42P01", "22008"] {
            assert!(!transient(c), "{c}");
        }
    }
}
