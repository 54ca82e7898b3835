//! The record frame: the unit of the log.
//!
//! ```text
//! offset  size  field
//!      0     4  crc32c of bytes 4..18+len (everything after the CRC)
//!      4     4  len: body length, u32 LE, at most MAX_RECORD_LEN
//!      8     8  lsn, u64 LE: exactly the previous record's + 1
//!     16     1  kind: 0 = batch marker, 1..=255 the caller's
//!     17     1  flags: 0 (reserved; anything else is refused)
//!     18   len  body
//! ```
//! A batch marker (kind 0) opens every group commit; its body is the wall
//! clock as i64 LE milliseconds, always 8 bytes. That fixed shape is what
//! makes the search for a later marker past damage cheap: only offsets where
//! `len == 8` and `kind == 0` need a CRC check.
//!
//! Decoding never allocates and checks `len` against the limit and the bytes
//! actually present before touching the body.

use crate::bytes::{u32_at, u64_at};
use crate::position::LogPos;

/// Kind of the batch marker record. Kinds 1..=255 belong to the caller.
pub const RECORD_BATCH: u8 = 0;

/// Largest record body. A 10,000-task batch enqueue carrying up to 64 MiB of
/// payload must fit in one record, with room for its per-task fields.
pub const MAX_RECORD_LEN: usize = 80 * 1024 * 1024;

/// Bytes before the body.
pub(crate) const RECORD_HEADER_LEN: usize = 18;

/// Body length of a batch marker: the wall clock, i64 LE milliseconds.
pub(crate) const BATCH_BODY_LEN: usize = 8;

/// One decoded record, borrowing its body from the segment's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Log sequence number: exactly the previous record's + 1, from 1.
    pub lsn: u64,
    /// [`RECORD_BATCH`] for the log's batch markers, 1..=255 the caller's.
    pub kind: u8,
    /// The record's bytes as the caller wrote them, CRC-checked.
    pub body: &'a [u8],
    /// Where the body starts in the log (set by replay; zero elsewhere).
    pub body_at: LogPos,
}

impl RecordRef<'_> {
    /// The wall clock (ms) a batch marker carries; `None` for other kinds.
    pub fn batch_clock(&self) -> Option<i64> {
        if self.kind != RECORD_BATCH {
            return None;
        }
        Some(i64::from_le_bytes(self.body.try_into().ok()?))
    }

    /// Bytes this record occupies in the log.
    pub(crate) fn framed_len(&self) -> usize {
        RECORD_HEADER_LEN + self.body.len()
    }
}

/// Decodes the record at the start of `buf`, checking only the frame (length,
/// CRC, flags, marker shape) — the caller checks the LSN sequence.
pub(crate) fn decode_record(buf: &[u8]) -> Result<RecordRef<'_>, &'static str> {
    let (Some(crc), Some(len), Some(lsn)) = (u32_at(buf, 0), u32_at(buf, 4), u64_at(buf, 8)) else {
        return Err("truncated record header");
    };
    let len = len as usize;
    if len > MAX_RECORD_LEN {
        return Err("record length over the limit");
    }
    let end = RECORD_HEADER_LEN + len;
    let Some(framed) = buf.get(..end) else {
        return Err("record runs past the end of the file");
    };
    if crc32c::crc32c(&framed[4..]) != crc {
        return Err("checksum mismatch");
    }
    let (kind, flags) = (framed[16], framed[17]);
    if flags != 0 {
        return Err("unknown record flags");
    }
    if kind == RECORD_BATCH && len != BATCH_BODY_LEN {
        return Err("malformed batch marker");
    }
    Ok(RecordRef {
        lsn,
        kind,
        body: &framed[RECORD_HEADER_LEN..],
        body_at: LogPos::default(),
    })
}

/// Offset of the first valid batch marker at or after `from` whose lsn is
/// above `after_lsn`. O(n): the fixed marker shape filters candidates before
/// any CRC is computed.
pub(crate) fn find_batch_marker(buf: &[u8], from: usize, after_lsn: u64) -> Option<usize> {
    const MARKER_LEN: usize = RECORD_HEADER_LEN + BATCH_BODY_LEN;
    let last_start = buf.len().checked_sub(MARKER_LEN)?;
    (from..=last_start).find(|&at| {
        buf[at + 4..at + 8] == (BATCH_BODY_LEN as u32).to_le_bytes()
            && buf[at + 16] == RECORD_BATCH
            && buf[at + 17] == 0
            && decode_record(&buf[at..]).is_ok_and(|r| r.lsn > after_lsn)
    })
}

/// Appends the frame of one record to `buf`: a header whose length and CRC
/// are patched by [`finish_record`] once `body` has written itself in.
pub(crate) fn start_record(buf: &mut Vec<u8>, lsn: u64, kind: u8) -> usize {
    let start = buf.len();
    let mut header = [0u8; RECORD_HEADER_LEN];
    header[8..16].copy_from_slice(&lsn.to_le_bytes());
    header[16] = kind;
    buf.extend_from_slice(&header);
    start
}

/// Patches length and CRC of the record begun at `start`; returns its body
/// length. A body over `u32::MAX` gets a length no decoder accepts; callers
/// refuse such batches before they reach a disk.
pub(crate) fn finish_record(buf: &mut [u8], start: usize) -> usize {
    let body_len = buf.len() - start - RECORD_HEADER_LEN;
    let len_field = u32::try_from(body_len).unwrap_or(u32::MAX);
    buf[start + 4..start + 8].copy_from_slice(&len_field.to_le_bytes());
    let crc = crc32c::crc32c(&buf[start + 4..]);
    buf[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    body_len
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn record(lsn: u64, kind: u8, body: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        let start = start_record(&mut buf, lsn, kind);
        buf.extend_from_slice(body);
        finish_record(&mut buf, start);
        buf
    }

    #[test]
    fn frames_decode_and_damage_is_refused() {
        let buf = record(9, 3, b"hello");
        let rec = decode_record(&buf).unwrap();
        assert_eq!((rec.lsn, rec.kind, rec.body), (9, 3, &b"hello"[..]));
        assert_eq!(rec.framed_len(), buf.len());
        for at in 0..buf.len() {
            let mut bad = buf.clone();
            bad[at] ^= 0x10;
            assert!(decode_record(&bad).is_err(), "flip at {at} accepted");
        }
        assert_eq!(
            decode_record(&buf[..buf.len() - 1]),
            Err("record runs past the end of the file")
        );
    }

    #[test]
    fn a_huge_length_is_refused_before_the_body_is_looked_at() {
        let mut buf = record(1, 1, b"x");
        buf[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode_record(&buf), Err("record length over the limit"));
    }

    #[test]
    fn marker_search_finds_only_valid_later_markers() {
        let mut buf = record(5, 2, b"payload");
        let marker_at = buf.len();
        buf.extend(record(6, RECORD_BATCH, &77i64.to_le_bytes()));
        assert_eq!(find_batch_marker(&buf, 1, 0), Some(marker_at));
        assert_eq!(find_batch_marker(&buf, 1, 6), None);
        buf[marker_at + 20] ^= 1;
        assert_eq!(find_batch_marker(&buf, 0, 0), None);
        assert_eq!(
            decode_record(&record(1, RECORD_BATCH, b"short")),
            Err("malformed batch marker")
        );
    }
}
