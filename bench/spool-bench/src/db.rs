//! The benchmarks' way to the database: `DATABASE_URL` (default:
//! the local development server), fresh schema names, plain connections.

/// `DATABASE_URL`, or the local development server.
pub fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A schema name of its own for one system's run: `spool_<what>_<random>`.
pub fn fresh_schema(what: &str) -> String {
    format!("spool_{what}_{:08x}", rand::random::<u32>())
}

/// A plain connection of its own to [`database_url`], or a panic saying
/// why there is none.
pub async fn connect() -> tokio_postgres::Client {
    connect_to(&database_url()).await
}

/// A plain connection of its own to `url`, or a panic saying why there is
/// none.
pub async fn connect_to(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot use PostgreSQL at {url}: {e}"));
    tokio::spawn(connection);
    client
}

/// Drops `schema` at `url` with everything in it, if it is there.
pub async fn drop_schema(url: &str, schema: &str) {
    connect_to(url)
        .await
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .unwrap_or_else(|e| panic!("cannot drop schema {schema}: {e}"));
}
