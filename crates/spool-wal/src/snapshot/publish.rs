//! Publishing a checkpoint and reclaiming what it makes unnecessary. Runs on
//! the WAL thread, so every batch submitted before the checkpoint is already
//! durable: the checkpoint never covers state the log could still lose.
//!
//! Order matters for crash safety: rename, fsync the directory (the new
//! checkpoint is now durable), and only then delete older checkpoints and
//! segments — keeping the previous checkpoint and every segment with records
//! at or above its start lsn.

use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;

use tracing::info;

use crate::error::{io_err, WalError};
use crate::fs::{remove_if_present, Fs};
use crate::layout::Layout;
use crate::snapshot::PendingSnapshot;

/// What the WAL thread knows it may keep or delete.
#[derive(Debug, Default)]
pub(crate) struct Retention {
    /// Start lsns of valid published checkpoints, ascending.
    pub snapshots: Vec<u64>,
    /// (first lsn, path) of every segment, oldest first, the active one last.
    pub segments: VecDeque<(u64, PathBuf)>,
}

/// Publishes `snap`; returns the newest checkpoint's start lsn.
pub(crate) fn publish(
    fs: &dyn Fs,
    layout: &Layout,
    retention: &mut Retention,
    snap: PendingSnapshot,
) -> Result<u64, WalError> {
    let lsn = snap.start_lsn;
    if snap.tmp != layout.snapshot_tmp(lsn) {
        let reason = io::Error::new(
            io::ErrorKind::InvalidInput,
            "the checkpoint was written outside this log's directory",
        );
        return Err(io_err("publish", &snap.tmp)(reason));
    }
    let (snap_dir, target) = (layout.snap_dir(), layout.snapshot(lsn));
    fs.rename(&snap.tmp, &target)
        .map_err(io_err("rename", &snap.tmp))?;
    fs.sync_dir(&snap_dir)
        .map_err(io_err("fsync dir", &snap_dir))?;

    let snapshots = &mut retention.snapshots;
    if let Err(at) = snapshots.binary_search(&lsn) {
        snapshots.insert(at, lsn);
    }
    let newest = snapshots.last().copied().unwrap_or(lsn);
    if snapshots.len() < 2 {
        return Ok(newest);
    }
    let previous = snapshots[snapshots.len() - 2];
    let stale: Vec<u64> = snapshots.drain(..snapshots.len() - 2).collect();
    for old in &stale {
        remove_if_present(fs, &layout.snapshot(*old))?;
    }
    if !stale.is_empty() {
        fs.sync_dir(&snap_dir)
            .map_err(io_err("fsync dir", &snap_dir))?;
    }

    let segments = &mut retention.segments;
    let mut removed = 0;
    // A segment's records all lie below the next segment's first lsn.
    while segments.len() >= 2 && segments[1].0 <= previous {
        if let Some((_, path)) = segments.pop_front() {
            remove_if_present(fs, &path)?;
            removed += 1;
        }
    }
    if removed > 0 {
        let wal_dir = layout.wal_dir();
        fs.sync_dir(&wal_dir)
            .map_err(io_err("fsync dir", &wal_dir))?;
    }
    info!(
        checkpoint = lsn,
        kept_from = previous,
        checkpoints_deleted = stale.len(),
        segments_deleted = removed,
        "published checkpoint"
    );
    Ok(newest)
}
