//! The one thing operations need from a connection: run a statement.
//!
//! Pooled connections prepare each statement once and keep it
//! ([`deadpool_postgres`]'s statement cache), so a hot statement is one
//! round trip. A caller's own transaction (transactional enqueue) prepares
//! as it goes: its connection is not ours to fill with statements.
//!
//! A pooled connection runs each statement as a transaction of its own, so
//! one that failed with a serialization failure (SQLSTATE 40001) changed
//! nothing and is run again, up to [`ATTEMPTS`] times in all. That is what
//! a statement meets when the rotation ([`crate::rotate`]) moved a row it
//! was about to lock, update or delete to another generation's partition
//! after the statement began; run again, it finds the row where it now is.
//! Statements inside a transaction are not retried: the transaction is
//! lost, and only its owner can start it again.

use async_trait::async_trait;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// Parameters of a statement.
pub(crate) type Params<'a> = [&'a (dyn ToSql + Sync)];

#[async_trait]
pub(crate) trait Db: Send + Sync {
    async fn query(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, tokio_postgres::Error>;
}

/// How many times a pooled statement runs at most when it keeps meeting
/// rows moved under it. Each failure means a move committed after the
/// statement's snapshot was taken, and one turn of the ring commits at
/// most 21 moves (20 batches of its first step and its last step, checked
/// in [`crate::rotate`]), so a statement outlasts any turn; with 3, a
/// claim that met three batches of one turn in a row failed with
/// `unavailable` (found by `bench/compare`'s steady state).
pub(crate) const ATTEMPTS: usize = 24;

/// Whether `e` is a serialization failure.
pub(crate) fn moved_under_it(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE)
}

#[async_trait]
impl Db for deadpool_postgres::Client {
    async fn query(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let statement = self.prepare_cached(sql).await?;
        let mut attempt = 1;
        loop {
            match tokio_postgres::Client::query(self, &statement, params).await {
                Err(e) if attempt < ATTEMPTS && moved_under_it(&e) => attempt += 1,
                done => return done,
            }
        }
    }
}

#[async_trait]
impl Db for deadpool_postgres::Transaction<'_> {
    async fn query(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let statement = self.prepare_cached(sql).await?;
        tokio_postgres::Transaction::query(self, &statement, params).await
    }
}

#[async_trait]
impl Db for tokio_postgres::Transaction<'_> {
    async fn query(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        tokio_postgres::Transaction::query(self, sql, params).await
    }
}
