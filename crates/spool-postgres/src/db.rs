//! The one thing operations need from a connection: run a statement.
//!
//! Pooled connections prepare each statement once and keep it
//! ([`deadpool_postgres`]'s statement cache), so a hot statement is one
//! round trip. A caller's own transaction (transactional enqueue) prepares
//! as it goes: its connection is not ours to fill with statements.

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

#[async_trait]
impl Db for deadpool_postgres::Client {
    async fn query(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let statement = self.prepare_cached(sql).await?;
        tokio_postgres::Client::query(self, &statement, params).await
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
