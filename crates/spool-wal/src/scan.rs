//! Walking the records of one segment, and telling a torn tail from
//! corruption where the valid records stop.
//!
//! The rule (docs/log-format.md, "Recovery rules"): only one batch is ever
//! unsynced, so
//! - in any segment but the newest, every byte was synced: an invalid record
//!   there is corruption;
//! - in the newest, an invalid record followed by a valid batch marker means
//!   a later batch was written after it, so it had been synced: corruption;
//! - otherwise only the last batch can be affected: if anything but zeros
//!   follows, it is a torn tail (never acknowledged); only zeros is the clean
//!   end of a preallocated file.

use crate::record::{decode_record, find_batch_marker, RecordRef};

/// Where and why a segment's valid records stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScanEnd {
    Clean,
    Torn {
        offset: usize,
        /// From `offset` to the last non-zero byte, inclusive.
        bytes: usize,
        reason: String,
    },
    Corrupt {
        offset: usize,
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanOutcome {
    /// The lsn the next record would carry.
    pub next_lsn: u64,
    /// Offset just past the last valid record.
    pub valid_end: usize,
    pub end: ScanEnd,
}

impl ScanOutcome {
    pub(crate) fn last_lsn(&self, first_lsn: u64) -> Option<u64> {
        (self.next_lsn > first_lsn).then(|| self.next_lsn - 1)
    }
}

/// Visits every valid record of `buf` from `start`, expecting lsns from
/// `first_lsn` on; stops early only if `visit` fails.
pub(crate) fn scan_records<E>(
    buf: &[u8],
    start: usize,
    first_lsn: u64,
    is_newest: bool,
    mut visit: impl FnMut(RecordRef<'_>) -> Result<(), E>,
) -> Result<ScanOutcome, E> {
    let mut at = start.min(buf.len());
    let mut next_lsn = first_lsn;
    while at < buf.len() {
        let rec = match decode_record(&buf[at..]) {
            Ok(rec) if rec.lsn == next_lsn => rec,
            Ok(rec) => {
                let reason = format!("lsn {} where {next_lsn} was expected", rec.lsn);
                return Ok(stopped(buf, at, next_lsn, is_newest, reason));
            }
            Err(reason) => return Ok(stopped(buf, at, next_lsn, is_newest, reason.into())),
        };
        let Some(after) = next_lsn.checked_add(1) else {
            let reason = "lsn overflow".to_string();
            return Ok(stopped(buf, at, next_lsn, is_newest, reason));
        };
        visit(rec)?;
        at += rec.framed_len();
        next_lsn = after;
    }
    Ok(ScanOutcome {
        next_lsn,
        valid_end: at,
        end: ScanEnd::Clean,
    })
}

fn stopped(buf: &[u8], at: usize, next_lsn: u64, is_newest: bool, reason: String) -> ScanOutcome {
    let end = classify(buf, at, next_lsn, is_newest, reason);
    ScanOutcome {
        next_lsn,
        valid_end: at,
        end,
    }
}

fn classify(buf: &[u8], at: usize, next_lsn: u64, is_newest: bool, reason: String) -> ScanEnd {
    if !is_newest {
        return ScanEnd::Corrupt {
            offset: at,
            reason: format!("{reason} in a segment that is not the newest"),
        };
    }
    // Markers of acknowledged batches carry lsns at or above the bad record's;
    // the search includes `at` itself, where a valid marker with a wrong lsn
    // means a gap, not a tear.
    let after_lsn = next_lsn.saturating_sub(1);
    if let Some(marker) = find_batch_marker(buf, at, after_lsn) {
        return ScanEnd::Corrupt {
            offset: at,
            reason: format!("{reason}, followed by a valid batch marker at byte {marker}"),
        };
    }
    match buf[at..].iter().rposition(|&b| b != 0) {
        None => ScanEnd::Clean,
        Some(last) => ScanEnd::Torn {
            offset: at,
            bytes: last + 1,
            reason,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::batch::BatchBuffer;
    use std::convert::Infallible;

    fn two_batches() -> (Vec<u8>, usize) {
        let mut first = BatchBuffer::new(1, 100);
        first.append(1, |b| b.extend_from_slice(&[7; 40]));
        let mut second = BatchBuffer::new(3, 200);
        second.append(1, |b| b.extend_from_slice(&[8; 40]));
        let mut buf = first.as_bytes().to_vec();
        let split = buf.len();
        buf.extend_from_slice(second.as_bytes());
        (buf, split)
    }

    fn scan(buf: &[u8], newest: bool) -> ScanOutcome {
        let Ok(outcome) = scan_records(buf, 0, 1, newest, |_| Ok::<(), Infallible>(()));
        outcome
    }

    #[test]
    fn zeros_after_the_records_are_a_clean_end() {
        let (mut buf, _) = two_batches();
        let len = buf.len();
        buf.resize(len + 1000, 0);
        let out = scan(&buf, true);
        assert_eq!(
            (out.next_lsn, out.valid_end, out.end),
            (5, len, ScanEnd::Clean)
        );
    }

    #[test]
    fn damage_in_the_last_batch_is_torn_and_before_it_corrupt() {
        let (buf, split) = two_batches();
        let mut torn = buf.clone();
        torn.truncate(buf.len() - 3);
        torn.resize(buf.len() + 100, 0);
        let out = scan(&torn, true);
        assert_eq!(out.next_lsn, 4);
        assert!(
            matches!(out.end, ScanEnd::Torn { bytes, .. } if bytes == buf.len() - 3 - out.valid_end)
        );

        let mut flipped = buf.clone();
        flipped[split - 5] ^= 1;
        let out = scan(&flipped, true);
        assert!(matches!(out.end, ScanEnd::Corrupt { offset, .. } if offset == out.valid_end));
        assert_eq!(out.next_lsn, 2);

        let out = scan(&torn, false);
        assert!(
            matches!(out.end, ScanEnd::Corrupt { .. }),
            "older segments are all synced"
        );
    }
}
