//! The store a benchmark runs against — the embedded engine, a server by
//! URL, or PostgreSQL — built in one place; the workloads see only
//! `Arc<dyn Store>`.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use spool_client::RemoteStore;
use spool_core::Store;
use spool_engine::{Engine, EngineConfig};
use spool_postgres::{PgConfig, PgStore};
use tempfile::TempDir;

use super::args::BenchArgs;

/// An open store, and what keeps it alive.
pub(crate) struct Target {
    pub store: Arc<dyn Store>,
    /// A human description, for the report.
    pub description: String,
    /// The temporary data directory, deleted on drop. Declared after
    /// `store` so that the engine is closed before its files go.
    _temp: Option<TempDir>,
}

/// Opens the store `args` point at; `runtime` runs what the store needs
/// to connect.
pub(crate) fn open(args: &BenchArgs, runtime: &tokio::runtime::Runtime) -> anyhow::Result<Target> {
    if let Some(url) = &args.postgres {
        let config = PgConfig {
            schema: args.pg_schema.clone(),
            ..PgConfig::default()
        };
        let store = runtime
            .block_on(PgStore::connect(url, config))
            .context("cannot open the PostgreSQL store")?;
        return Ok(Target {
            store: Arc::new(store),
            description: format!(
                "PostgreSQL store, in-process, schema {}, SKIP LOCKED claims",
                args.pg_schema
            ),
            _temp: None,
        });
    }
    if let Some(url) = &args.url {
        let mut builder = RemoteStore::builder(url.clone());
        if let Ok(token) = std::env::var("SPOOL_TOKEN") {
            builder = builder.token(token);
        }
        let store = builder
            .build()
            .with_context(|| format!("cannot build a client for {url}"))?;
        return Ok(Target {
            store: Arc::new(store),
            description: format!("spool server at {url}, over HTTP"),
            _temp: None,
        });
    }
    let (dir, temp) = match &args.data {
        Some(dir) => (dir.clone(), None),
        None => {
            let temp = tempfile::Builder::new()
                .prefix("spool-bench-")
                .tempdir()
                .context("cannot create a temporary data directory")?;
            (temp.path().to_path_buf(), Some(temp))
        }
    };
    let engine = open_engine(&dir, args.segment_size)?;
    let kept = if temp.is_some() { "temporary" } else { "kept" };
    Ok(Target {
        store: Arc::new(engine),
        description: format!(
            "embedded engine, in-process, durable (fdatasync), data dir {} ({kept})",
            dir.display()
        ),
        _temp: temp,
    })
}

fn open_engine(dir: &Path, segment_size: Option<u64>) -> anyhow::Result<Engine> {
    let mut config = EngineConfig::new(dir);
    if let Some(size) = segment_size {
        config.segment_size = size;
    }
    Engine::open(config).with_context(|| format!("cannot open the engine in {}", dir.display()))
}
