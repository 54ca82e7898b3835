//! [`check`]: offline verification of a data directory for `spool check`.
//!
//! Reads everything, changes nothing, takes no lock, never panics on
//! garbage: META, every segment (header, chain, every record's frame, CRC
//! and lsn, torn tail versus corruption by the same rules as recovery) and
//! every checkpoint (whole-file validation). Only failing to read a file at
//! all is an `Err`; damage is reported per file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::{list_segments, used_count};
use crate::error::{io_err, WalError};
use crate::fs::{read_into, read_prefix, Fs};
use crate::layout::Layout;
use crate::meta;
use crate::scan::{scan_records, ScanEnd};
use crate::segment::{SegmentHeader, SEGMENT_HEADER_LEN};
use crate::snapshot;

/// What `check` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// The data directory checked, as given.
    pub dir: PathBuf,
    /// `META`'s status (`Corrupt` at offset 0 if missing or unreadable).
    pub meta: FileStatus,
    /// The instance id `META` holds; `None` when it is missing or damaged.
    /// A segment with another id is reported corrupt.
    pub instance: Option<u128>,
    /// Segments, oldest first.
    pub segments: Vec<FileCheck>,
    /// Published checkpoints, oldest first.
    pub snapshots: Vec<FileCheck>,
}

/// One file's statistics and verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCheck {
    /// The file checked, under the data directory.
    pub file: PathBuf,
    /// The file's length, preallocated space included.
    pub bytes: u64,
    /// Segment: its header's first lsn. Checkpoint: its start lsn.
    pub first_lsn: Option<u64>,
    /// Segment: its last valid record's lsn.
    pub last_lsn: Option<u64>,
    /// Segment: valid records (markers included). Checkpoint: chunks.
    pub records: u64,
    /// Segment: batch markers among the records.
    pub batches: u64,
    /// What the check concluded about the file.
    pub status: FileStatus,
}

/// A file's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    /// Everything in the file decodes and it sits where the chain expects it.
    Ok,
    /// A preallocated segment that never received a record.
    Unused,
    /// The newest segment ends in an unacknowledged, partly written batch.
    TornTail {
        /// Byte offset where the unfinished batch starts; recovery keeps the
        /// file up to here.
        offset: u64,
        /// Unacknowledged bytes recovery drops: from `offset` to the last
        /// non-zero byte.
        bytes_dropped: u64,
    },
    /// Acknowledged data is damaged (or, for META, missing).
    Corrupt {
        /// Byte offset of the first damage; 0 for a bad header, a broken
        /// chain or a META problem.
        offset: u64,
        /// What is wrong, for the operator.
        reason: String,
    },
}

impl CheckReport {
    fn files(&self) -> impl Iterator<Item = &FileCheck> {
        self.segments.iter().chain(&self.snapshots)
    }

    /// Nothing damaged and no torn tail.
    pub fn is_clean(&self) -> bool {
        self.meta == FileStatus::Ok
            && self
                .files()
                .all(|f| matches!(f.status, FileStatus::Ok | FileStatus::Unused))
    }

    /// Whether acknowledged data is damaged anywhere (strict recovery would refuse).
    pub fn has_corruption(&self) -> bool {
        matches!(self.meta, FileStatus::Corrupt { .. })
            || self
                .files()
                .any(|f| matches!(f.status, FileStatus::Corrupt { .. }))
    }

    /// The segment with a torn tail, if any.
    pub fn torn_tail(&self) -> Option<&FileCheck> {
        self.segments
            .iter()
            .find(|f| matches!(f.status, FileStatus::TornTail { .. }))
    }
}

/// Verifies the data directory `dir`.
pub fn check(fs: Arc<dyn Fs>, dir: &Path) -> Result<CheckReport, WalError> {
    let fs = &*fs;
    let layout = Layout::new(dir);
    let (meta, instance) = match meta::read(fs, &layout) {
        Ok(Some(instance)) => (FileStatus::Ok, Some(instance)),
        Ok(None) => (corrupt(0, "META is missing"), None),
        Err(WalError::BadMeta { reason, .. }) => (corrupt(0, reason), None),
        Err(e) => return Err(e),
    };
    Ok(CheckReport {
        dir: dir.to_path_buf(),
        meta,
        instance,
        segments: check_segments(fs, &layout, instance)?,
        snapshots: check_snapshots(fs, &layout)?,
    })
}

fn corrupt(offset: u64, reason: impl Into<String>) -> FileStatus {
    FileStatus::Corrupt {
        offset,
        reason: reason.into(),
    }
}

fn check_segments(
    fs: &dyn Fs,
    layout: &Layout,
    instance: Option<u128>,
) -> Result<Vec<FileCheck>, WalError> {
    let files = list_segments(fs, layout)?;
    let mut headers = Vec::with_capacity(files.len());
    for file in &files {
        let prefix =
            read_prefix(fs, &file.path, SEGMENT_HEADER_LEN).map_err(io_err("read", &file.path))?;
        headers.push(SegmentHeader::decode(&prefix));
    }
    let used = used_count(fs, &files, &headers)?;

    let mut reports = Vec::with_capacity(files.len());
    let mut buf = Vec::new();
    // (seq, next lsn) of the previous segment with a valid header; no next
    // lsn after a hollowed segment (cut back to its header once nothing in it
    // was needed), whose successor may start anywhere later.
    let mut previous: Option<(u64, Option<u64>)> = None;
    for (i, file) in files.iter().enumerate() {
        read_into(fs, &file.path, &mut buf).map_err(io_err("read", &file.path))?;
        let mut report = FileCheck {
            file: file.path.clone(),
            bytes: buf.len() as u64,
            first_lsn: None,
            last_lsn: None,
            records: 0,
            batches: 0,
            status: FileStatus::Ok,
        };
        let header = match &headers[i] {
            _ if i >= used => {
                report.status = FileStatus::Unused;
                reports.push(report);
                continue;
            }
            Err(e) => {
                report.status = corrupt(0, format!("bad segment header: {e}"));
                reports.push(report);
                previous = None;
                continue;
            }
            Ok(header) => *header,
        };
        report.first_lsn = Some(header.first_lsn);
        let chain_problem = if header.seq != file.seq {
            Some(format!("header says seq {}", header.seq))
        } else if instance.is_some_and(|id| id != header.instance) {
            Some("segment belongs to another data directory (instance id differs)".into())
        } else {
            match previous {
                Some((seq, _)) if seq + 1 != header.seq => {
                    Some(format!("segment {} is missing before this one", seq + 1))
                }
                Some((_, Some(next))) if next != header.first_lsn => Some(format!(
                    "segment starts at lsn {}, but the previous one ends at {}",
                    header.first_lsn,
                    next.saturating_sub(1)
                )),
                _ => None,
            }
        };

        let is_newest = i + 1 == used;
        let (mut records, mut batches) = (0, 0);
        let outcome = scan_records(
            &buf,
            SEGMENT_HEADER_LEN,
            header.first_lsn,
            is_newest,
            |rec| {
                records += 1;
                batches += u64::from(rec.batch_clock().is_some());
                Ok::<(), std::convert::Infallible>(())
            },
        );
        let Ok(outcome) = outcome;
        report.records = records;
        report.batches = batches;
        report.last_lsn = outcome.last_lsn(header.first_lsn);
        report.status = match (chain_problem, outcome.end) {
            (Some(reason), _) => corrupt(0, reason),
            (None, ScanEnd::Clean) => FileStatus::Ok,
            (None, ScanEnd::Torn { offset, bytes, .. }) => FileStatus::TornTail {
                offset: offset as u64,
                bytes_dropped: bytes as u64,
            },
            (None, ScanEnd::Corrupt { offset, reason }) => corrupt(offset as u64, reason),
        };
        let hollow = records == 0 && !is_newest;
        previous = Some((header.seq, (!hollow).then_some(outcome.next_lsn)));
        reports.push(report);
    }
    Ok(reports)
}

fn check_snapshots(fs: &dyn Fs, layout: &Layout) -> Result<Vec<FileCheck>, WalError> {
    let mut reports = Vec::new();
    for lsn in snapshot::list(fs, layout)? {
        let path = layout.snapshot(lsn);
        let bytes = fs
            .open_read(&path)
            .and_then(|f| f.len())
            .map_err(io_err("stat", &path))?;
        let (records, status) = match snapshot::open_named(fs, layout, lsn) {
            Ok(reader) => (reader.chunk_count(), FileStatus::Ok),
            Err(WalError::Corrupt { offset, reason, .. }) => (0, corrupt(offset, reason)),
            Err(e) => return Err(e),
        };
        reports.push(FileCheck {
            file: path,
            bytes,
            first_lsn: Some(lsn),
            last_lsn: None,
            records,
            batches: 0,
            status,
        });
    }
    Ok(reports)
}

impl fmt::Display for FileStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileStatus::Ok => f.write_str("ok"),
            FileStatus::Unused => f.write_str("unused (preallocated)"),
            FileStatus::TornTail {
                offset,
                bytes_dropped,
            } => write!(
                f,
                "torn tail at byte {offset}: {bytes_dropped} unacknowledged bytes would be dropped"
            ),
            FileStatus::Corrupt { offset, reason } => {
                write!(f, "CORRUPT at byte {offset}: {reason}")
            }
        }
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.dir.display())?;
        writeln!(f, "  META: {}", self.meta)?;
        for seg in &self.segments {
            let lsns = match (seg.first_lsn, seg.last_lsn) {
                (Some(first), Some(last)) => format!("lsn {first}..={last}"),
                (Some(first), None) => format!("empty, starts at lsn {first}"),
                _ => "no valid header".to_string(),
            };
            writeln!(
                f,
                "  {}: {} bytes, {} records in {} batches, {lsns}: {}",
                seg.file.display(),
                seg.bytes,
                seg.records,
                seg.batches,
                seg.status
            )?;
        }
        for snap in &self.snapshots {
            writeln!(
                f,
                "  {}: {} bytes, {} chunks: {}",
                snap.file.display(),
                snap.bytes,
                snap.records,
                snap.status
            )?;
        }
        let verdict = if self.is_clean() {
            "clean"
        } else if self.has_corruption() {
            "CORRUPT"
        } else {
            "torn tail only (recovery drops it)"
        };
        write!(f, "  verdict: {verdict}")
    }
}
