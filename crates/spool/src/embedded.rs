//! The embedded store: Spool's own engine over a data directory, in this
//! process (feature `embedded`, on by default).
//!
//! One process opens a directory at a time. Every acknowledged change is on
//! disk (a write-ahead log with group commit) before the call returns.

use std::path::Path;
use std::sync::Arc;

pub use spool_engine::{Engine, EngineConfig, EngineError};

/// Opens (or creates) the data directory `dir` with the default settings.
pub fn open(dir: impl AsRef<Path>) -> Result<Arc<Engine>, EngineError> {
    open_with(EngineConfig::new(dir.as_ref()))
}

/// Opens a data directory with these settings.
pub fn open_with(config: EngineConfig) -> Result<Arc<Engine>, EngineError> {
    Engine::open(config).map(Arc::new)
}
