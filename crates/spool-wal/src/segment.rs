//! Segment files: the header format. The whole-file decoder built on it is
//! [`decode_segment`](crate::decode_segment).
//!
//! ```text
//! offset  size  field
//!      0     8  magic "SPOOLWAL"
//!      8     4  format version, u32 LE
//!     12     8  seq, u64 LE (equals the number in the file name)
//!     20     8  first lsn, u64 LE (the lsn the first record must carry)
//!     28    16  instance id, u128 LE (equals META's)
//!     44    16  reserved, zero
//!     60     4  crc32c of bytes 0..60
//!     64     …  records, back to back (see `record`)
//! ```
//! A segment is written with its header and synced before any record goes
//! in, so a header that does not decode means "never started" — unless
//! records follow it, which is corruption. An all-zero header is the
//! preallocated state.

use crate::bytes::{u128_at, u32_at, u64_at};

const MAGIC: &[u8; 8] = b"SPOOLWAL";
const VERSION: u32 = 1;
const CRC_AT: usize = 60;

/// Bytes before the first record of a segment.
pub(crate) const SEGMENT_HEADER_LEN: usize = 64;

/// A decoded segment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    /// The segment's place in the chain; each segment's is the previous + 1.
    pub seq: u64,
    /// The lsn of the segment's first record.
    pub first_lsn: u64,
    /// The data directory's instance id from `META`: a segment copied in
    /// from another directory does not match.
    pub instance: u128,
}

impl SegmentHeader {
    pub(crate) fn encode(&self) -> [u8; SEGMENT_HEADER_LEN] {
        let mut out = [0u8; SEGMENT_HEADER_LEN];
        out[0..8].copy_from_slice(MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_le_bytes());
        out[12..20].copy_from_slice(&self.seq.to_le_bytes());
        out[20..28].copy_from_slice(&self.first_lsn.to_le_bytes());
        out[28..44].copy_from_slice(&self.instance.to_le_bytes());
        let crc = crc32c::crc32c(&out[..CRC_AT]);
        out[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes the header at the start of `buf` (a whole file or a prefix).
    pub fn decode(buf: &[u8]) -> Result<SegmentHeader, String> {
        let Some(head) = buf.get(..SEGMENT_HEADER_LEN) else {
            return Err(format!(
                "file shorter than the {SEGMENT_HEADER_LEN}-byte header"
            ));
        };
        if head.iter().all(|&b| b == 0) {
            return Err("blank header (preallocated, never started)".into());
        }
        if &head[..8] != MAGIC {
            return Err("bad magic".into());
        }
        if u32_at(head, CRC_AT) != Some(crc32c::crc32c(&head[..CRC_AT])) {
            return Err("header checksum mismatch".into());
        }
        match u32_at(head, 8) {
            Some(VERSION) => {}
            other => return Err(format!("unsupported format version {other:?}")),
        }
        match (u64_at(head, 12), u64_at(head, 20), u128_at(head, 28)) {
            (Some(seq), Some(first_lsn), Some(instance)) => Ok(SegmentHeader {
                seq,
                first_lsn,
                instance,
            }),
            _ => Err("truncated header".into()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let h = SegmentHeader {
            seq: 3,
            first_lsn: 99,
            instance: 0xabc,
        };
        let bytes = h.encode();
        assert_eq!(SegmentHeader::decode(&bytes), Ok(h));
        for at in 0..SEGMENT_HEADER_LEN {
            let mut bad = bytes;
            bad[at] ^= 4;
            assert!(
                SegmentHeader::decode(&bad).is_err(),
                "flip at {at} accepted"
            );
        }
        assert!(SegmentHeader::decode(&[0; SEGMENT_HEADER_LEN])
            .unwrap_err()
            .contains("blank"));
        assert!(SegmentHeader::decode(&bytes[..10]).is_err());
    }
}
