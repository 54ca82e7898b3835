//! Offline verification of a data directory (`spool check`).
//!
//! First the log's structure (every segment and checkpoint: headers, chain,
//! CRCs, LSNs); then, if nothing is corrupt, a read-only recovery that
//! rebuilds state in memory and counts tasks per queue and state. Nothing is
//! written and no lock is taken, so it can run beside a live engine (it then
//! sees what was durable when it read).

use std::path::Path;
use std::sync::Arc;

use spool_core::{Clock, QueueStats, SystemClock};
use spool_wal::{Fs, RecoveryMode, StdFs, Wal, WalConfig, DEFAULT_SEGMENT_SIZE};

use crate::error::EngineError;
use crate::recovery::recover;

/// What [`check`] found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Per-file structure and verdicts.
    pub log: spool_wal::CheckReport,
    /// Counts per queue and state as recovery would rebuild them; empty when
    /// the log is corrupt (recovery would refuse).
    pub queues: Vec<QueueStats>,
    /// Live tasks in all queues.
    pub tasks: u64,
}

impl CheckReport {
    /// Acknowledged data is damaged: the engine would refuse to start.
    pub fn has_corruption(&self) -> bool {
        self.log.has_corruption()
    }
}

/// Verifies the data directory at `dir` without changing it.
pub fn check(dir: &Path) -> Result<CheckReport, EngineError> {
    let fs: Arc<dyn Fs> = Arc::new(StdFs);
    let log = spool_wal::check(fs.clone(), dir)?;
    if log.has_corruption() {
        return Ok(CheckReport {
            log,
            queues: Vec::new(),
            tasks: 0,
        });
    }
    let mut wal = Wal::open_read_only(
        fs,
        WalConfig {
            dir: dir.to_path_buf(),
            segment_size: DEFAULT_SEGMENT_SIZE,
            recovery: RecoveryMode::Strict,
        },
    )?;
    let mut recovered = recover(&mut wal)?;
    let now = SystemClock.now().max(recovered.last_now);
    recovered.state.activate_due(now);
    Ok(CheckReport {
        log,
        queues: recovered.state.stats(now),
        tasks: recovered.state.tasks.len() as u64,
    })
}
