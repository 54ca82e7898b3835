//! [`SnapshotWriter`]: fills `snap/<start_lsn>.snap.tmp` chunk by chunk from
//! the engine's core thread while log writes continue.
//!
//! Chunks are buffered and written in large pieces; `finish` writes the
//! footer and fdatasyncs the tmp file. Publishing (rename, directory fsync,
//! deleting what the new checkpoint makes unnecessary) happens on the WAL
//! thread via [`crate::WalWriter::submit_snapshot`], after every batch
//! submitted before it is durable.
//!
//! A writer dropped before `finish` succeeded (a failed write, a full disk,
//! an abandoned checkpoint) removes its tmp file at once: left behind, it
//! would hold space on a disk that may already be full until the next open.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracing::warn;

use crate::error::{io_err, WalError};
use crate::fs::{remove_if_present, Fs, FsFile};
use crate::layout::Layout;
use crate::snapshot::format::{chunk_header, encode_footer, encode_header, MAX_CHUNK_LEN};

/// Writes are gathered up to this size before they reach the file.
const FLUSH_AT: usize = 1024 * 1024;

/// A checkpoint being written.
#[derive(Debug)]
pub struct SnapshotWriter {
    fs: Arc<dyn Fs>,
    file: Box<dyn FsFile>,
    /// Cleared once `finish` hands the file over for publishing.
    remove_on_drop: bool,
    pending: PendingSnapshot,
    buf: Vec<u8>,
    /// File offset where `buf` starts.
    offset: u64,
    chunks: u64,
    total: u32,
}

/// A finished, synced checkpoint waiting to be published by the WAL thread.
#[derive(Debug)]
pub struct PendingSnapshot {
    pub(crate) tmp: PathBuf,
    pub(crate) start_lsn: u64,
    /// Seqs of segments that still hold data the caller needs (payloads of
    /// live tasks), ascending: kept even once no replay needs them.
    pub(crate) pinned: Vec<u64>,
}

impl PendingSnapshot {
    /// Keeps these segments (any order) when the checkpoint reclaims space.
    pub fn pin_segments(&mut self, mut seqs: Vec<u64>) {
        seqs.sort_unstable();
        seqs.dedup();
        self.pinned = seqs;
    }

    /// The first lsn NOT covered by the checkpoint: replay resumes here.
    pub fn start_lsn(&self) -> u64 {
        self.start_lsn
    }
}

impl SnapshotWriter {
    /// Starts `<dir>/snap/<start_lsn>.snap.tmp`, where `dir` is the data
    /// directory exactly as given in [`crate::WalConfig::dir`] (publishing
    /// refuses a checkpoint written elsewhere) and `start_lsn` the first lsn
    /// the checkpoint does not cover.
    pub fn create(fs: Arc<dyn Fs>, dir: &Path, start_lsn: u64) -> Result<SnapshotWriter, WalError> {
        let layout = Layout::new(dir);
        let snap_dir = layout.snap_dir();
        fs.create_dir_all(&snap_dir)
            .map_err(io_err("create dir", &snap_dir))?;
        let tmp = layout.snapshot_tmp(start_lsn);
        let file = fs.create(&tmp).map_err(io_err("create", &tmp))?;
        let mut buf = Vec::with_capacity(FLUSH_AT);
        buf.extend_from_slice(&encode_header(start_lsn));
        Ok(SnapshotWriter {
            fs,
            file,
            remove_on_drop: true,
            pending: PendingSnapshot {
                tmp,
                start_lsn,
                pinned: Vec::new(),
            },
            buf,
            offset: 0,
            chunks: 0,
            total: 0,
        })
    }

    /// Appends one CRC-framed chunk; the reader returns chunks exactly as given.
    pub fn append_chunk(&mut self, chunk: &[u8]) -> Result<(), WalError> {
        if chunk.len() > MAX_CHUNK_LEN {
            return Err(WalError::TooLarge {
                what: "snapshot chunk",
                len: chunk.len(),
                max: MAX_CHUNK_LEN,
            });
        }
        let header = chunk_header(chunk);
        self.total = crc32c::crc32c_append(self.total, &header);
        self.chunks += 1;
        self.buf.extend_from_slice(&header);
        if self.buf.len() + chunk.len() > FLUSH_AT {
            self.flush()?;
        }
        if chunk.len() >= FLUSH_AT {
            // Large chunks go straight to the file instead of through `buf`.
            self.write_at_end(chunk)
        } else {
            self.buf.extend_from_slice(chunk);
            Ok(())
        }
    }

    /// Writes the footer and fdatasyncs the tmp file.
    pub fn finish(mut self) -> Result<PendingSnapshot, WalError> {
        let footer = encode_footer(self.chunks, self.total);
        self.buf.extend_from_slice(&footer);
        self.flush()?;
        self.file
            .sync_data()
            .map_err(io_err("fdatasync", &self.pending.tmp))?;
        self.remove_on_drop = false;
        Ok(PendingSnapshot {
            tmp: self.pending.tmp.clone(),
            start_lsn: self.pending.start_lsn,
            pinned: std::mem::take(&mut self.pending.pinned),
        })
    }

    fn flush(&mut self) -> Result<(), WalError> {
        let buf = std::mem::take(&mut self.buf);
        self.write_at_end(&buf)?;
        self.buf = buf;
        self.buf.clear();
        Ok(())
    }

    fn write_at_end(&mut self, bytes: &[u8]) -> Result<(), WalError> {
        self.file
            .write_all_at(bytes, self.offset)
            .map_err(io_err("write", &self.pending.tmp))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        if !self.remove_on_drop {
            return;
        }
        let tmp = &self.pending.tmp;
        if let Err(e) = remove_if_present(&*self.fs, tmp) {
            // Opening removes it at the latest (`repair`).
            warn!(error = %e, "cannot remove an unfinished checkpoint");
        }
    }
}
