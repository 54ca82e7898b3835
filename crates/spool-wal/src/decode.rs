//! [`decode_segment`], the public whole-file decoder of a segment (used by
//! `check`, the fuzz target and property tests): the header
//! ([`crate::segment`]), then the records as recovery scans them
//! ([`crate::scan`]).

use std::convert::Infallible;

use crate::scan::{scan_records, ScanEnd};
use crate::segment::{SegmentHeader, SEGMENT_HEADER_LEN};

/// How a decoded segment ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentEnd {
    /// After the last record: the end of the file, or only zeros.
    Clean,
    /// An invalid record with no valid batch marker after it: an unfinished
    /// write, never acknowledged.
    Torn {
        /// Byte offset where the unfinished batch starts.
        offset: u64,
        /// Bytes from `offset` to the last non-zero byte: what recovery
        /// drops.
        bytes_dropped: u64,
    },
    /// An invalid record followed by a valid batch marker: damaged
    /// acknowledged data.
    Corrupt {
        /// Byte offset of the invalid record.
        offset: u64,
        /// Why it does not decode.
        reason: String,
    },
}

/// What [`decode_segment`] found in one segment file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentDecode {
    /// The header, or why it does not decode (then no record was read: the
    /// counts are zero and the end is `Clean`).
    pub header: Result<SegmentHeader, String>,
    /// Valid records, batch markers included.
    pub records: u64,
    /// Batch markers among the records: one per group commit.
    pub batches: u64,
    /// The lsn of the last valid record; `None` when there is none.
    pub last_lsn: Option<u64>,
    /// Bytes up to the end of the last valid record (0 if the header is bad).
    pub valid_len: u64,
    /// What follows the last valid record.
    pub end: SegmentEnd,
}

/// Decodes a whole segment file as if it were the newest one (where damage
/// with no later batch marker is a torn tail). Never panics; allocates
/// nothing proportional to what the bytes claim.
pub fn decode_segment(bytes: &[u8]) -> SegmentDecode {
    let header = SegmentHeader::decode(bytes);
    let head = match &header {
        Ok(head) => *head,
        Err(_) => {
            return SegmentDecode {
                header,
                records: 0,
                batches: 0,
                last_lsn: None,
                valid_len: 0,
                end: SegmentEnd::Clean,
            }
        }
    };
    let (mut records, mut batches) = (0u64, 0u64);
    let outcome = scan_records(bytes, SEGMENT_HEADER_LEN, head.first_lsn, true, |rec| {
        records += 1;
        batches += u64::from(rec.batch_clock().is_some());
        Ok::<(), Infallible>(())
    });
    let Ok(outcome) = outcome;
    SegmentDecode {
        header,
        records,
        batches,
        last_lsn: outcome.last_lsn(head.first_lsn),
        valid_len: outcome.valid_end as u64,
        end: match outcome.end {
            ScanEnd::Clean => SegmentEnd::Clean,
            ScanEnd::Torn { offset, bytes, .. } => SegmentEnd::Torn {
                offset: offset as u64,
                bytes_dropped: bytes as u64,
            },
            ScanEnd::Corrupt { offset, reason } => SegmentEnd::Corrupt {
                offset: offset as u64,
                reason,
            },
        },
    }
}
