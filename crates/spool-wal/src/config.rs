//! How a log is opened: where, how big its segments are, and what recovery
//! may do with damaged data.

use std::path::PathBuf;

/// Default segment size: large enough that rollovers are rare, small enough
/// that deleting a checkpointed segment frees space promptly.
pub const DEFAULT_SEGMENT_SIZE: u64 = 64 * 1024 * 1024;

/// Settings of one opened data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalConfig {
    /// The data directory (holds `LOCK`, `META`, `wal/`, `snap/`).
    pub dir: PathBuf,
    /// Preallocated size of each segment. A batch larger than this gets a
    /// segment of its own, sized to fit.
    pub segment_size: u64,
    /// What recovery does with damaged acknowledged data; strict unless an
    /// operator forces it.
    pub recovery: RecoveryMode,
}

impl WalConfig {
    /// Defaults: 64 MiB segments, strict recovery.
    pub fn new(dir: impl Into<PathBuf>) -> WalConfig {
        WalConfig {
            dir: dir.into(),
            segment_size: DEFAULT_SEGMENT_SIZE,
            recovery: RecoveryMode::Strict,
        }
    }
}

/// What recovery does with damaged acknowledged data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Refuse to start, naming the file and byte offset. A torn tail (never
    /// acknowledged) is always dropped, in either mode.
    #[default]
    Strict,
    /// An operator's explicit override: drop everything from the damage on,
    /// log it loudly, and continue.
    Force,
}
