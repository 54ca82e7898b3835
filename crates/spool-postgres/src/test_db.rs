//! What the store's in-crate tests share: a connection to the test
//! database and a fresh schema that is dropped however the test ends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;

use tokio_postgres::NoTls;

/// `DATABASE_URL`, or the local development server.
pub(crate) fn url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// A plain session, or a panic saying why there is none.
pub(crate) async fn session() -> tokio_postgres::Client {
    let url = url();
    let (client, connection) = match tokio_postgres::connect(&url, NoTls).await {
        Ok(c) => c,
        Err(e) => panic!(
            "cannot use PostgreSQL at {url}: {e}\n\
             Start it, or point DATABASE_URL at a database where this user may create schemas."
        ),
    };
    tokio::spawn(connection);
    client
}

/// Runs `check` with a fresh schema name (`spool_<what>_<random>`), then
/// drops the schema, also when `check` panicked, and passes the panic on.
pub(crate) async fn in_fresh_schema<F, Fut>(what: &str, check: F)
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let schema = format!("spool_{what}_{:016x}", rand::random::<u64>());
    let checked = tokio::spawn(check(schema.clone())).await;
    session()
        .await
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .unwrap();
    if let Err(e) = checked {
        std::panic::resume_unwind(e.into_panic());
    }
}
