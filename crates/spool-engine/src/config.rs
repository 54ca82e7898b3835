//! How an engine is opened.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spool_core::{Clock, SystemClock};
use spool_wal::{Fs, RecoveryMode, StdFs};

/// Settings for [`crate::Engine::open`]. Start from [`EngineConfig::new`].
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The data directory (created if missing). One process at a time.
    pub dir: PathBuf,
    /// The store's clock.
    pub clock: Arc<dyn Clock>,
    /// File access; tests substitute a fault-injecting file system.
    pub fs: Arc<dyn Fs>,
    /// Refuse enqueues to queues that were not created with `put_queue`.
    pub strict_queues: bool,
    /// Size of a log segment file.
    pub segment_size: u64,
    /// Take a checkpoint once this much log has been written since the last.
    pub checkpoint_bytes: u64,
    /// After a failed checkpoint the next one waits this long, doubling
    /// with each failure in a row up to `checkpoint_backoff_max`.
    pub checkpoint_backoff_min: Duration,
    /// The longest wait between checkpoint attempts while they keep failing.
    pub checkpoint_backoff_max: Duration,
    /// What to do on damage to acknowledged data: refuse to start (Strict),
    /// or drop everything from the damage on (Force).
    pub recovery: RecoveryMode,
    /// Requests that may wait for the core before senders are pushed back.
    pub intake: usize,
}

impl EngineConfig {
    /// The defaults for the data directory `dir`: the system clock, real
    /// files, 64 MiB segments, a checkpoint every 512 MiB of log, strict
    /// recovery.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        EngineConfig {
            dir: dir.into(),
            clock: Arc::new(SystemClock),
            fs: Arc::new(StdFs),
            strict_queues: false,
            segment_size: 64 * 1024 * 1024,
            checkpoint_bytes: 512 * 1024 * 1024,
            checkpoint_backoff_min: Duration::from_secs(1),
            checkpoint_backoff_max: Duration::from_secs(300),
            recovery: RecoveryMode::Strict,
            intake: 8192,
        }
    }
}
