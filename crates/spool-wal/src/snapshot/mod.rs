//! Checkpoint files: writing ([`SnapshotWriter`]), validated reading
//! ([`SnapshotReader`]), choosing the newest valid one at startup, and
//! publishing one from the WAL thread.
//!
//! Retention invariant: the newest checkpoint and the one before it are
//! kept, with every segment holding records at or above the older one's
//! start, so a damaged newest checkpoint can always fall back to the
//! previous one and replay from there.

mod format;
mod publish;
mod reader;
mod writer;

use tracing::warn;

use crate::error::{io_err, WalError};
use crate::fs::Fs;
use crate::layout::{parse_snapshot_name, Layout};

pub use format::MAX_CHUNK_LEN;
pub(crate) use publish::{publish, KeptSegment, Retention};
pub use reader::SnapshotReader;
pub use writer::{PendingSnapshot, SnapshotWriter};

/// Start lsns of the published checkpoints, ascending.
pub(crate) fn list(fs: &dyn Fs, layout: &Layout) -> Result<Vec<u64>, WalError> {
    let dir = layout.snap_dir();
    let names = match fs.list(&dir) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io_err("list", &dir)(e)),
    };
    let mut lsns: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_snapshot_name(n))
        .collect();
    lsns.sort_unstable();
    Ok(lsns)
}

/// The newest checkpoint that validates, falling back to older ones; the
/// start lsns of those found damaged are pushed to `corrupt`. If checkpoints
/// exist but none validates, the newest one's error.
pub(crate) fn latest(
    fs: &dyn Fs,
    layout: &Layout,
    corrupt: &mut Vec<u64>,
) -> Result<Option<SnapshotReader>, WalError> {
    let mut first_error = None;
    for lsn in list(fs, layout)?.into_iter().rev() {
        match open_named(fs, layout, lsn) {
            Ok(reader) => return Ok(Some(reader)),
            Err(e @ WalError::Corrupt { .. }) => {
                warn!(error = %e, "checkpoint is damaged; falling back to the previous one");
                corrupt.push(lsn);
                first_error.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    first_error.map_or(Ok(None), Err)
}

/// Opens the checkpoint `snap/<lsn>.snap`, whose header must agree with its name.
pub(crate) fn open_named(
    fs: &dyn Fs,
    layout: &Layout,
    lsn: u64,
) -> Result<SnapshotReader, WalError> {
    let path = layout.snapshot(lsn);
    let reader = SnapshotReader::open(fs, &path)?;
    if reader.start_lsn() != lsn {
        let reason = format!("header says lsn {}, unlike its name", reader.start_lsn());
        return Err(WalError::corrupt(&path, 0, reason));
    }
    Ok(reader)
}
