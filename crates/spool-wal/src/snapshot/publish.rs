//! Publishing a checkpoint and reclaiming what it makes unnecessary. Runs on
//! the WAL thread, so every batch submitted before the checkpoint is already
//! durable: the checkpoint never covers state the log could still lose.
//!
//! Order matters for crash safety: rename, fsync the directory (the new
//! checkpoint is now durable), and only then delete older checkpoints and
//! segments — keeping the previous checkpoint and every segment with records
//! at or above its start lsn.
//!
//! A segment below that point that still holds payloads of live tasks
//! (pinned by the caller) is kept whole. One that holds none is deleted if
//! it is the oldest, else hollowed: cut back to its header, so the chain of
//! segment seqs stays unbroken for the checks that read it at open.

use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;

use tracing::info;

use crate::error::{io_err, WalError};
use crate::fs::{remove_if_present, Fs};
use crate::layout::Layout;
use crate::reader::SegmentReader;
use crate::segment::SEGMENT_HEADER_LEN;
use crate::snapshot::PendingSnapshot;

/// What the WAL thread knows it may keep or delete.
#[derive(Debug, Default)]
pub(crate) struct Retention {
    /// Start lsns of valid published checkpoints, ascending.
    pub snapshots: Vec<u64>,
    /// Every segment, oldest first, the active one last.
    pub segments: VecDeque<KeptSegment>,
}

#[derive(Debug)]
pub(crate) struct KeptSegment {
    pub first_lsn: u64,
    pub seq: u64,
    pub path: PathBuf,
    /// Cut back to its header: nothing left to reclaim but the file itself.
    pub hollow: bool,
}

impl KeptSegment {
    pub(crate) fn new(first_lsn: u64, seq: u64, path: PathBuf) -> KeptSegment {
        KeptSegment {
            first_lsn,
            seq,
            path,
            hollow: false,
        }
    }
}

/// Publishes `snap`; returns the newest checkpoint's start lsn.
pub(crate) fn publish(
    fs: &dyn Fs,
    layout: &Layout,
    retention: &mut Retention,
    snap: PendingSnapshot,
    reader: &SegmentReader,
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

    let (removed, hollowed) = reclaim(
        fs,
        layout,
        &mut retention.segments,
        previous,
        &snap.pinned,
        reader,
    )?;
    info!(
        checkpoint = lsn,
        kept_from = previous,
        checkpoints_deleted = stale.len(),
        segments_deleted = removed,
        segments_hollowed = hollowed,
        "published checkpoint"
    );
    Ok(newest)
}

/// Deletes or hollows the segments no replay and no live payload needs:
/// those wholly below `previous` (the next segment starts at or before it)
/// and not `pinned`. Returns (deleted, hollowed).
fn reclaim(
    fs: &dyn Fs,
    layout: &Layout,
    segments: &mut VecDeque<KeptSegment>,
    previous: u64,
    pinned: &[u64],
    reader: &SegmentReader,
) -> Result<(usize, usize), WalError> {
    let unneeded = |seg: &KeptSegment, next: &KeptSegment| {
        next.first_lsn <= previous && pinned.binary_search(&seg.seq).is_err()
    };
    let mut removed = 0;
    while segments.len() >= 2 && unneeded(&segments[0], &segments[1]) {
        if let Some(seg) = segments.pop_front() {
            remove_if_present(fs, &seg.path)?;
            reader.forget(seg.seq);
            removed += 1;
        }
    }
    let mut hollowed = 0;
    for i in 1..segments.len().saturating_sub(1) {
        if segments[i].hollow || !unneeded(&segments[i], &segments[i + 1]) {
            continue;
        }
        let seg = &mut segments[i];
        let file = fs.open(&seg.path).map_err(io_err("open", &seg.path))?;
        file.set_len(SEGMENT_HEADER_LEN as u64)
            .map_err(io_err("truncate", &seg.path))?;
        file.sync_all().map_err(io_err("fsync", &seg.path))?;
        reader.forget(seg.seq);
        seg.hollow = true;
        hollowed += 1;
    }
    if removed > 0 {
        let wal_dir = layout.wal_dir();
        fs.sync_dir(&wal_dir)
            .map_err(io_err("fsync dir", &wal_dir))?;
    }
    Ok((removed, hollowed))
}
