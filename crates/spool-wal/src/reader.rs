//! Positioned reads of what the log wrote: the engine keeps task payloads
//! in the segments and reads them back by [`LogPos`].
//!
//! One open handle per segment, shared by every reader (a read is one
//! `pread`, no lock held while it runs). The WAL thread forgets a segment's
//! handle when it deletes or hollows the file.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{io_err, WalError};
use crate::fs::{Fs, FsFile};
use crate::layout::Layout;
use crate::position::LogPos;
use crate::record::MAX_RECORD_LEN;

/// Reads byte ranges of the log's segment files.
#[derive(Debug)]
pub struct SegmentReader {
    fs: Arc<dyn Fs>,
    layout: Layout,
    files: Mutex<HashMap<u64, Arc<dyn FsFile>>>,
}

impl SegmentReader {
    pub(crate) fn new(fs: Arc<dyn Fs>, layout: Layout) -> SegmentReader {
        SegmentReader {
            fs,
            layout,
            files: Mutex::new(HashMap::new()),
        }
    }

    /// The `len` bytes at `at`.
    pub fn read(&self, at: LogPos, len: usize) -> Result<Vec<u8>, WalError> {
        let mut buf = vec![0; len];
        self.read_into(at, &mut buf)?;
        Ok(buf)
    }

    /// The bytes of a length-prefixed field at `at` (a u32 length, then
    /// that many bytes, as log records encode payloads). A length over the
    /// record limit is damage, refused before anything is allocated.
    pub fn read_prefixed(&self, at: LogPos) -> Result<Vec<u8>, WalError> {
        let mut len = [0u8; 4];
        self.read_into(at, &mut len)?;
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_RECORD_LEN {
            let path = self.layout.segment(at.seq);
            return Err(WalError::corrupt(
                &path,
                at.offset,
                format!("a field claims {len} bytes"),
            ));
        }
        self.read(at.advance(4), len)
    }

    /// Up to `max` bytes from `at`, fewer where the file ends: one read for
    /// a run of neighbouring fields.
    pub fn read_window(&self, at: LogPos, max: usize) -> Result<Vec<u8>, WalError> {
        let file = self.file(at.seq)?;
        let path = self.layout.segment(at.seq);
        let end = file.len().map_err(io_err("stat", &path))?;
        let len = (max as u64).min(end.saturating_sub(at.offset)) as usize;
        let mut buf = vec![0; len];
        file.read_exact_at(&mut buf, at.offset)
            .map_err(io_err("read payload", &path))?;
        Ok(buf)
    }

    /// Fills `buf` with the bytes at `at`.
    pub fn read_into(&self, at: LogPos, buf: &mut [u8]) -> Result<(), WalError> {
        let file = self.file(at.seq)?;
        let path = self.layout.segment(at.seq);
        file.read_exact_at(buf, at.offset)
            .map_err(io_err("read payload", &path))
    }

    fn file(&self, seq: u64) -> Result<Arc<dyn FsFile>, WalError> {
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = files.get(&seq) {
            return Ok(Arc::clone(f));
        }
        let path = self.layout.segment(seq);
        let file: Arc<dyn FsFile> =
            Arc::from(self.fs.open_read(&path).map_err(io_err("open", &path))?);
        files.insert(seq, Arc::clone(&file));
        Ok(file)
    }

    /// Drops the handle of a segment that was deleted or emptied.
    pub(crate) fn forget(&self, seq: u64) {
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&seq);
    }
}
