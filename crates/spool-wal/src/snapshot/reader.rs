//! [`SnapshotReader`]: a checkpoint validated whole before a single chunk is
//! handed out, so a damaged newest checkpoint can still be passed over for
//! the previous one before the engine has applied anything.
//!
//! Validation walks every chunk (header, length bound, CRC) and checks count
//! and total against the footer; reading then walks them again. Every
//! allocation is bounded by the bytes left in the file, and chunk lengths by
//! [`MAX_CHUNK_LEN`](super::format::MAX_CHUNK_LEN), whatever the file claims.

use std::path::{Path, PathBuf};

use crate::error::{io_err, WalError};
use crate::fs::{Fs, FsFile};
use crate::snapshot::format::{
    chunk_matches, decode_chunk_header, decode_footer, decode_header, CHUNK_HEADER_LEN, FOOTER_LEN,
    HEADER_LEN,
};

/// A validated checkpoint.
#[derive(Debug)]
pub struct SnapshotReader {
    file: Box<dyn FsFile>,
    path: PathBuf,
    start_lsn: u64,
    chunk_count: u64,
    /// Offset of the footer: chunks lie in `HEADER_LEN..data_end`.
    data_end: u64,
}

impl SnapshotReader {
    /// Opens and fully validates the checkpoint file at `path`; damage is
    /// `WalError::Corrupt`. (`Wal::latest_snapshot` is the usual way in.)
    pub fn open(fs: &dyn Fs, path: &Path) -> Result<SnapshotReader, WalError> {
        let file = fs.open_read(path).map_err(io_err("open", path))?;
        let len = file.len().map_err(io_err("stat", path))?;
        let corrupt = |offset: u64, reason: String| WalError::corrupt(path, offset, reason);
        if len < (HEADER_LEN + FOOTER_LEN) as u64 {
            return Err(corrupt(
                0,
                format!("{len} bytes is too short for a checkpoint"),
            ));
        }
        let mut head = [0u8; HEADER_LEN];
        file.read_exact_at(&mut head, 0)
            .map_err(io_err("read", path))?;
        let start_lsn = decode_header(&head).map_err(|e| corrupt(0, e))?;
        let data_end = len - FOOTER_LEN as u64;
        let mut foot = [0u8; FOOTER_LEN];
        file.read_exact_at(&mut foot, data_end)
            .map_err(io_err("read", path))?;
        let (count, total) = decode_footer(&foot).map_err(|e| corrupt(data_end, e))?;

        let reader = SnapshotReader {
            file,
            path: path.to_path_buf(),
            start_lsn,
            chunk_count: count,
            data_end,
        };
        let mut chunks = reader.chunk_walk();
        let mut scratch = Vec::new();
        let (mut seen, mut seen_total) = (0u64, 0u32);
        while let Some(header) = chunks.next_into(&mut scratch)? {
            seen += 1;
            seen_total = crc32c::crc32c_append(seen_total, &header);
        }
        if seen != count || seen_total != total {
            let reason = format!("footer says {count} chunks, the file holds {seen} valid ones");
            return Err(corrupt(data_end, reason));
        }
        Ok(reader)
    }

    /// The first lsn the checkpoint does not cover: replay from here.
    pub fn start_lsn(&self) -> u64 {
        self.start_lsn
    }

    /// How many chunks `chunks` yields.
    pub fn chunk_count(&self) -> u64 {
        self.chunk_count
    }

    /// The file this checkpoint was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The chunks, in the order they were appended. Yields at most one
    /// error (if the file changed since validation), then ends.
    pub fn chunks(self) -> impl Iterator<Item = Result<Vec<u8>, WalError>> {
        let mut walk = ChunkWalk {
            offset: HEADER_LEN as u64,
            reader: self,
        };
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed {
                return None;
            }
            let mut data = Vec::new();
            match walk.next_into(&mut data) {
                Ok(Some(_)) => Some(Ok(data)),
                Ok(None) => None,
                Err(e) => {
                    failed = true;
                    Some(Err(e))
                }
            }
        })
    }

    fn chunk_walk(&self) -> ChunkWalk<&SnapshotReader> {
        ChunkWalk {
            offset: HEADER_LEN as u64,
            reader: self,
        }
    }
}

/// A cursor over the chunks of a checkpoint.
struct ChunkWalk<R> {
    reader: R,
    offset: u64,
}

impl<R: std::borrow::Borrow<SnapshotReader>> ChunkWalk<R> {
    /// Reads the next chunk's data into `data`; returns its header, or
    /// `None` at the footer.
    fn next_into(
        &mut self,
        data: &mut Vec<u8>,
    ) -> Result<Option<[u8; CHUNK_HEADER_LEN]>, WalError> {
        let reader = self.reader.borrow();
        let path = &reader.path;
        if self.offset >= reader.data_end {
            return Ok(None);
        }
        let at = self.offset;
        let corrupt = |reason: String| WalError::corrupt(path, at, reason);
        let room = reader.data_end - at;
        if room < CHUNK_HEADER_LEN as u64 {
            return Err(corrupt("truncated chunk header".into()));
        }
        let mut header = [0u8; CHUNK_HEADER_LEN];
        reader
            .file
            .read_exact_at(&mut header, at)
            .map_err(io_err("read", path))?;
        let body_at = at + CHUNK_HEADER_LEN as u64;
        let (crc, len) =
            decode_chunk_header(&header, reader.data_end - body_at).map_err(corrupt)?;
        data.clear();
        data.resize(len, 0);
        reader
            .file
            .read_exact_at(data, body_at)
            .map_err(io_err("read", path))?;
        if !chunk_matches(&header, crc, data) {
            return Err(corrupt("chunk checksum mismatch".into()));
        }
        self.offset = body_at + len as u64;
        Ok(Some(header))
    }
}
