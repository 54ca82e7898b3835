//! `spool serve --postgres` nodes sharing one database schema, for the
//! multi-node tests, and the direct connection that drops the schema after.
//!
//! Needs PostgreSQL at `DATABASE_URL` (default: the local server); fails,
//! never skips, when it cannot be reached.

use super::{TestResult, TestServer};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub(crate) fn database_url() -> String {
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

/// Drops its schema when dropped: kept by a test fixture after the server
/// that uses the schema, so the server is gone first.
pub(crate) struct DropSchema(pub(crate) String);

impl Drop for DropSchema {
    fn drop(&mut self) {
        let schema = self.0.clone();
        // Drop runs inside the test's runtime, which cannot block on another
        // future: a thread of its own does the work.
        let done = std::thread::spawn(move || -> TestResult {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let admin = admin().await?;
                drop_schema(&admin, &schema, Ok(())).await
            })
        })
        .join();
        if let Ok(Err(e)) = done {
            eprintln!("could not drop schema {}: {e}", self.0);
        }
    }
}
