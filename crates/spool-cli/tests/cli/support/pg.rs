//! `spool serve --postgres` nodes sharing one database schema, for the
//! multi-node tests, and the direct connection that drops the schema after.
//!
//! Needs PostgreSQL at `DATABASE_URL` (default: the local server); fails,
//! never skips, when it cannot be reached.

use super::{TestResult, TestServer};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// A schema name no other run uses, starting with `prefix`.
pub(crate) fn fresh_schema(prefix: &str) -> String {
    format!("{prefix}_{:08x}", rand::random::<u32>())
}

/// `n` nodes on `schema`, started at once: migrations must be safe when
/// nodes race.
pub(crate) fn start_nodes(schema: &str, n: usize) -> Result<Vec<TestServer>, BoxError> {
    let url = database_url();
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let (url, schema) = (url.clone(), schema.to_string());
            std::thread::spawn(move || {
                TestServer::start_with(&["--postgres", &url, "--pg-schema", &schema]).map_err(|e| {
                    format!(
                        "cannot start `spool serve --postgres` (is PostgreSQL at {url} up?): {e}"
                    )
                })
            })
        })
        .collect();
    let mut nodes = Vec::new();
    for h in handles {
        nodes.push(h.join().map_err(|_| "start thread panicked")??);
    }
    Ok(nodes)
}

/// A direct connection, for the schema's cleanup; fails clearly when the
/// database is down.
pub(crate) async fn admin() -> Result<tokio_postgres::Client, BoxError> {
    let url = database_url();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .map_err(|e| format!("PostgreSQL at {url} is unreachable (set DATABASE_URL): {e}"))?;
    tokio::spawn(connection);
    Ok(client)
}

/// Drops `schema` through `admin`, then answers `result`: the run's own
/// failure wins over the cleanup's.
pub(crate) async fn drop_schema(
    admin: &tokio_postgres::Client,
    schema: &str,
    result: TestResult,
) -> TestResult {
    let dropped = admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await;
    result?;
    Ok(dropped?)
}
