//! The segment chain as found on disk at open: which segments hold the log,
//! which trailing files were never started, and where (under
//! [`RecoveryMode::Force`]) the chain was cut because of damage.
//!
//! Checked here, from headers alone: seqs consecutive (a missing middle
//! segment is damage), each header's seq equal to its file name's, the same
//! instance id as META, first lsns non-decreasing. The exact
//! `first_lsn == previous last lsn + 1` check needs the previous segment's
//! records, so replay does it.
//!
//! Trailing files whose header does not decode and that contain no valid
//! batch marker were preallocated (or their header write was torn) and never
//! received a record: they are "unused" and deleted by `start_writer`. A bad
//! header with a batch marker behind it is damage like any other.

use std::path::PathBuf;

use tracing::error;

use crate::config::RecoveryMode;
use crate::error::{io_err, WalError};
use crate::fs::{read_into, read_prefix, Fs};
use crate::layout::{parse_segment_name, Layout};
use crate::record::find_batch_marker;
use crate::segment::{SegmentHeader, SEGMENT_HEADER_LEN};

/// A segment whose header is valid.
#[derive(Debug, Clone)]
pub(crate) struct Segment {
    pub path: PathBuf,
    pub header: SegmentHeader,
}

/// Damage that `Force` recovery cut the log at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corruption {
    /// The segment the damage is in.
    pub file: PathBuf,
    /// Byte offset of the damage in that file; nothing from here on was kept.
    pub offset: u64,
    /// What does not decode, for the operator.
    pub reason: String,
}

#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// The chain, oldest first.
    pub segments: Vec<Segment>,
    /// Files to delete before writing: unused trailing files, and under
    /// `Force` every file from the damage on.
    pub discard: Vec<PathBuf>,
    /// The damage `Force` cut the chain at.
    pub cut: Option<Corruption>,
}

/// A segment file name found in `wal/`, in seq order.
#[derive(Debug)]
pub(crate) struct SegmentFile {
    pub seq: u64,
    pub path: PathBuf,
}

/// Segment files in `wal/`, oldest first (none if the directory is missing).
pub(crate) fn list_segments(fs: &dyn Fs, layout: &Layout) -> Result<Vec<SegmentFile>, WalError> {
    let dir = layout.wal_dir();
    let names = match fs.list(&dir) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io_err("list", &dir)(e)),
    };
    let mut files: Vec<SegmentFile> = names
        .iter()
        .filter_map(|name| parse_segment_name(name))
        .map(|seq| SegmentFile {
            seq,
            path: layout.segment(seq),
        })
        .collect();
    files.sort_by_key(|f| f.seq);
    Ok(files)
}

/// How many of `files` are in use: all but the trailing ones whose header
/// does not decode and that hold no valid batch marker.
pub(crate) fn used_count(
    fs: &dyn Fs,
    files: &[SegmentFile],
    headers: &[Result<SegmentHeader, String>],
) -> Result<usize, WalError> {
    let mut used = files.len().min(headers.len());
    let mut buf = Vec::new();
    while used > 0 && headers[used - 1].is_err() {
        let path = &files[used - 1].path;
        read_into(fs, path, &mut buf).map_err(io_err("read", path))?;
        if find_batch_marker(&buf, 0, 0).is_some() {
            break;
        }
        used -= 1;
    }
    Ok(used)
}

pub(crate) fn load(
    fs: &dyn Fs,
    layout: &Layout,
    instance: u128,
    mode: RecoveryMode,
) -> Result<Catalog, WalError> {
    let files = list_segments(fs, layout)?;
    let mut headers = Vec::with_capacity(files.len());
    for file in &files {
        let prefix =
            read_prefix(fs, &file.path, SEGMENT_HEADER_LEN).map_err(io_err("read", &file.path))?;
        headers.push(SegmentHeader::decode(&prefix));
    }
    let used = used_count(fs, &files, &headers)?;
    let mut catalog = Catalog {
        discard: files[used..].iter().map(|f| f.path.clone()).collect(),
        ..Catalog::default()
    };

    for (i, (file, header)) in files.iter().zip(&headers).take(used).enumerate() {
        let previous = catalog.segments.last().map(|s| s.header);
        let problem = match (header, previous) {
            (Err(e), _) => Some(format!("bad segment header: {e}")),
            (Ok(h), _) if h.seq != file.seq => Some(format!("header says seq {}", h.seq)),
            (Ok(h), _) if h.instance != instance => {
                Some("segment belongs to another data directory (instance id differs)".into())
            }
            (Ok(h), Some(p)) if h.seq != p.seq + 1 => {
                Some(format!("segment {} is missing before this one", p.seq + 1))
            }
            (Ok(h), Some(p)) if h.first_lsn < p.first_lsn => Some(format!(
                "first lsn {} is below the previous segment's {}",
                h.first_lsn, p.first_lsn
            )),
            (Ok(h), _) => {
                catalog.segments.push(Segment {
                    path: file.path.clone(),
                    header: *h,
                });
                None
            }
        };
        if let Some(reason) = problem {
            let damage = Corruption {
                file: file.path.clone(),
                offset: 0,
                reason,
            };
            if mode == RecoveryMode::Strict {
                return Err(WalError::corrupt(&damage.file, 0, damage.reason));
            }
            error!(
                file = %damage.file.display(),
                reason = %damage.reason,
                "FORCED RECOVERY: dropping this segment and every later one"
            );
            catalog.discard = files[i..].iter().map(|f| f.path.clone()).collect();
            catalog.cut = Some(damage);
            break;
        }
    }
    Ok(catalog)
}
