//! Segment files on the write side: creating one preallocated, starting it
//! (header written and synced before any record), resuming the newest one
//! at open, and finishing it.
//!
//! Invariants:
//! - a created segment's directory entry and size are durable before it is
//!   used, so an `fdatasync` per batch never has to flush allocation metadata;
//! - the header is durable before the first record is written, so a header
//!   that does not decode can only mean "no record was ever written here";
//! - a finished segment is truncated to its records and fsynced before the
//!   next one gets its header, so every segment but the newest ends exactly
//!   at its last record.

use std::path::PathBuf;

use crate::error::{io_err, WalError};
use crate::fs::{Fs, FsFile};
use crate::layout::Layout;
use crate::segment::{SegmentHeader, SEGMENT_HEADER_LEN};

/// A segment file, allocated, maybe not started.
#[derive(Debug)]
pub(crate) struct SegmentFile {
    pub seq: u64,
    pub path: PathBuf,
    pub file: Box<dyn FsFile>,
    pub allocated: u64,
}

/// The segment batches are appended to.
#[derive(Debug)]
pub(crate) struct ActiveSegment {
    pub seg: SegmentFile,
    /// Offset where the next batch goes.
    pub write_pos: u64,
}

/// Creates `wal/<seq>.wal` of `len` bytes with a blank header, durably.
pub(crate) fn preallocate(
    fs: &dyn Fs,
    layout: &Layout,
    seq: u64,
    len: u64,
) -> Result<SegmentFile, WalError> {
    let path = layout.segment(seq);
    let file = fs.create(&path).map_err(io_err("create", &path))?;
    let ready = file
        .allocate(len)
        .map_err(io_err("fallocate", &path))
        .and_then(|()| file.sync_all().map_err(io_err("fsync", &path)))
        .and_then(|()| {
            let dir = layout.wal_dir();
            fs.sync_dir(&dir).map_err(io_err("fsync dir", &dir))
        });
    if let Err(e) = ready {
        // Best effort: a blank leftover is harmless (recovery deletes it).
        let _ = fs.remove(&path);
        return Err(e);
    }
    Ok(SegmentFile {
        seq,
        path,
        file,
        allocated: len,
    })
}

/// Continues the existing segment `seq` at `path`, whose records end at
/// `end`, the file's length (recovery cut it there): opening on a full disk
/// then needs no new file.
pub(crate) fn resume(
    fs: &dyn Fs,
    seq: u64,
    path: PathBuf,
    end: u64,
) -> Result<ActiveSegment, WalError> {
    let file = fs.open(&path).map_err(io_err("open", &path))?;
    Ok(ActiveSegment {
        seg: SegmentFile {
            seq,
            path,
            file,
            allocated: end,
        },
        write_pos: end,
    })
}

/// Writes and syncs the header of `seg`, whose first record will be `first_lsn`.
pub(crate) fn start(
    seg: SegmentFile,
    first_lsn: u64,
    instance: u128,
) -> Result<ActiveSegment, WalError> {
    let header = SegmentHeader {
        seq: seg.seq,
        first_lsn,
        instance,
    };
    seg.file
        .write_all_at(&header.encode(), 0)
        .map_err(io_err("write", &seg.path))?;
    seg.file
        .sync_data()
        .map_err(io_err("fdatasync", &seg.path))?;
    Ok(ActiveSegment {
        seg,
        write_pos: SEGMENT_HEADER_LEN as u64,
    })
}

impl ActiveSegment {
    /// Bytes that still fit in the allocated space.
    pub(crate) fn room(&self) -> u64 {
        self.seg.allocated.saturating_sub(self.write_pos)
    }

    /// Grows the allocation so `len` more bytes fit.
    pub(crate) fn grow(&mut self, len: u64) -> Result<(), WalError> {
        let needed = self.write_pos + len;
        self.seg
            .file
            .allocate(needed)
            .map_err(io_err("fallocate", &self.seg.path))?;
        self.seg.allocated = self.seg.allocated.max(needed);
        Ok(())
    }

    /// Allocates the file to `len` bytes and makes the size durable, as
    /// [`preallocate`] does for a new segment.
    pub(crate) fn allocate_to(&mut self, len: u64) -> Result<(), WalError> {
        let path = &self.seg.path;
        self.seg
            .file
            .allocate(len)
            .map_err(io_err("fallocate", path))?;
        self.seg.file.sync_all().map_err(io_err("fsync", path))?;
        self.seg.allocated = self.seg.allocated.max(len);
        Ok(())
    }

    /// Appends `bytes` and makes them durable: one write, one `fdatasync`.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> Result<(), WalError> {
        let path = &self.seg.path;
        self.seg
            .file
            .write_all_at(bytes, self.write_pos)
            .map_err(io_err("write", path))?;
        self.write_pos += bytes.len() as u64;
        self.seg.file.sync_data().map_err(io_err("fdatasync", path))
    }

    /// Cuts the unused preallocated space and fsyncs: the segment is done.
    pub(crate) fn finish(&self) -> Result<(), WalError> {
        let path = &self.seg.path;
        self.seg
            .file
            .set_len(self.write_pos)
            .map_err(io_err("truncate", path))?;
        self.seg.file.sync_all().map_err(io_err("fsync", path))
    }
}
