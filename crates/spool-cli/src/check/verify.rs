//! The one call into the storage layers: what `spool check` verifies.
//!
//! The engine's check reads the log's structure (META, segments,
//! checkpoints) and, when nothing is damaged, rebuilds the state read-only to
//! count tasks per queue and state.

use std::path::Path;

use anyhow::Context;
use spool_engine::CheckReport;

pub(crate) fn verify(dir: &Path) -> anyhow::Result<CheckReport> {
    spool_engine::check(dir)
        .with_context(|| format!("cannot check data directory {}", dir.display()))
}
