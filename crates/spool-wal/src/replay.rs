//! Replay: hands every record from an lsn on to the caller, in order, and
//! finds where the log really ends (and what must be cut off there).
//!
//! Segments wholly below `from_lsn` are not read. From the segment holding
//! `from_lsn` on, every record's frame, CRC and lsn are checked, and each
//! segment's first lsn must continue the previous one exactly. What happens
//! where the valid records stop is decided by [`crate::scan`].

use std::path::PathBuf;

use tracing::{error, warn};

use crate::catalog::{Catalog, Corruption};
use crate::config::RecoveryMode;
use crate::error::{io_err, WalError};
use crate::fs::{read_into, Fs};
use crate::position::LogPos;
use crate::record::RecordRef;
use crate::scan::{scan_records, ScanEnd};
use crate::segment::SEGMENT_HEADER_LEN;

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplaySummary {
    /// The last lsn of the log (0 for an empty log); new records continue
    /// from `last_lsn + 1`.
    pub last_lsn: u64,
    /// The wall clock of the last batch marker read.
    pub last_batch_clock: Option<i64>,
    /// Records handed to the callback, batch markers included.
    pub records: u64,
    /// Bytes those records occupy in the log.
    pub bytes: u64,
    /// An unfinished last batch that was dropped.
    pub torn_tail: Option<TornTail>,
    /// Under [`RecoveryMode::Force`], the damage everything was dropped from.
    pub forced: Option<Corruption>,
}

/// The unacknowledged end of the log that recovery drops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The newest segment, where the unfinished batch lies.
    pub file: PathBuf,
    /// Byte offset where the batch starts; the file keeps what is before.
    pub offset: u64,
    /// Unacknowledged bytes dropped: from `offset` to the last non-zero byte.
    pub bytes_dropped: u64,
}

/// Where the log ends, for `start_writer` to repair and continue from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogEnd {
    pub next_lsn: u64,
    /// The newest kept segment (index into the catalog) and the length it
    /// keeps: its valid records, nothing after.
    pub keep: Option<(usize, u64)>,
    /// Catalog segments from this index on are dropped (Force).
    pub drop_from: usize,
    /// `ReplaySummary::bytes`, the log written since `from_lsn`.
    pub bytes: u64,
}

pub(crate) fn replay(
    fs: &dyn Fs,
    catalog: &Catalog,
    mode: RecoveryMode,
    from_lsn: u64,
    mut f: impl FnMut(RecordRef<'_>) -> Result<(), String>,
) -> Result<(ReplaySummary, LogEnd), WalError> {
    let segments = &catalog.segments;
    let from = from_lsn.max(1);
    let mut summary = ReplaySummary {
        last_lsn: 0,
        last_batch_clock: None,
        records: 0,
        bytes: 0,
        torn_tail: None,
        forced: catalog.cut.clone(),
    };
    let Some(first) = segments.first() else {
        if from > 1 {
            return Err(gap(from_lsn, "the log is empty"));
        }
        let end = LogEnd {
            next_lsn: 1,
            keep: None,
            drop_from: 0,
            bytes: 0,
        };
        return Ok((summary, end));
    };
    if from < first.header.first_lsn {
        let reason = format!(
            "the oldest segment starts at lsn {}",
            first.header.first_lsn
        );
        return Err(gap(from_lsn, reason));
    }
    let start = segments
        .iter()
        .rposition(|s| s.header.first_lsn <= from)
        .unwrap_or(0);

    let mut next_lsn = segments[start].header.first_lsn;
    let mut keep = None;
    let mut drop_from = segments.len();
    let mut buf = Vec::new();
    for (i, segment) in segments.iter().enumerate().skip(start) {
        if segment.header.first_lsn != next_lsn {
            let damage = Corruption {
                file: segment.path.clone(),
                offset: 0,
                reason: format!(
                    "segment starts at lsn {}, but the previous one ends at {}",
                    segment.header.first_lsn,
                    next_lsn - 1
                ),
            };
            forced_cut(mode, damage, &mut summary)?;
            drop_from = i;
            break;
        }
        read_into(fs, &segment.path, &mut buf).map_err(io_err("read", &segment.path))?;
        let is_newest = i + 1 == segments.len();
        let (seq, base) = (segment.header.seq, buf.as_ptr() as usize);
        let outcome = scan_records(&buf, SEGMENT_HEADER_LEN, next_lsn, is_newest, |mut rec| {
            rec.body_at = LogPos {
                seq,
                offset: (rec.body.as_ptr() as usize - base) as u64,
            };
            if let Some(clock) = rec.batch_clock() {
                summary.last_batch_clock = Some(clock);
            }
            if rec.lsn >= from {
                f(rec).map_err(WalError::Apply)?;
                summary.records += 1;
                summary.bytes += rec.framed_len() as u64;
            }
            Ok(())
        })?;
        next_lsn = outcome.next_lsn;
        keep = Some((i, outcome.valid_end as u64));
        match outcome.end {
            ScanEnd::Clean => {}
            ScanEnd::Torn {
                offset,
                bytes,
                reason,
            } => {
                warn!(
                    file = %segment.path.display(),
                    offset,
                    bytes_dropped = bytes,
                    %reason,
                    "dropping the torn tail of the log (an unacknowledged batch)"
                );
                summary.torn_tail = Some(TornTail {
                    file: segment.path.clone(),
                    offset: offset as u64,
                    bytes_dropped: bytes as u64,
                });
            }
            ScanEnd::Corrupt { offset, reason } => {
                let damage = Corruption {
                    file: segment.path.clone(),
                    offset: offset as u64,
                    reason,
                };
                forced_cut(mode, damage, &mut summary)?;
                drop_from = i + 1;
                break;
            }
        }
    }
    if next_lsn < from {
        let reason = format!("the log ends at lsn {}", next_lsn - 1);
        return Err(gap(from_lsn, reason));
    }
    summary.last_lsn = next_lsn - 1;
    let end = LogEnd {
        next_lsn,
        keep,
        drop_from,
        bytes: summary.bytes,
    };
    Ok((summary, end))
}

/// Strict: the damage is an error. Force: record it, log it loudly, go on.
fn forced_cut(
    mode: RecoveryMode,
    damage: Corruption,
    summary: &mut ReplaySummary,
) -> Result<(), WalError> {
    if mode == RecoveryMode::Strict {
        return Err(WalError::corrupt(
            &damage.file,
            damage.offset,
            damage.reason,
        ));
    }
    error!(
        file = %damage.file.display(),
        offset = damage.offset,
        reason = %damage.reason,
        "FORCED RECOVERY: dropping acknowledged data from this point on"
    );
    // Damage found by replay lies before any the catalog cut at.
    summary.forced = Some(damage);
    Ok(())
}

fn gap(from_lsn: u64, reason: impl Into<String>) -> WalError {
    WalError::Gap {
        from_lsn,
        reason: reason.into(),
    }
}
