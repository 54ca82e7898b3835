//! Where bytes lie in the log files, and the one rule that decides it.
//!
//! The engine keeps task payloads where the log wrote them and points at
//! them by position, so it must know where a batch will land before the WAL
//! thread writes it. Both sides use [`LogPos::place`]: a batch goes at the
//! end of the active segment unless that segment already reached its nominal
//! size, in which case it starts the next one. A batch is never split, so a
//! segment may run past the nominal size by at most one batch.

use crate::segment::SEGMENT_HEADER_LEN;

/// A byte position in the log: segment seq and offset in that file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LogPos {
    /// The segment's sequence number, the order of segments in the chain.
    pub seq: u64,
    /// Bytes from the start of the segment file, its header included.
    pub offset: u64,
}

impl LogPos {
    /// The first byte after a segment's header.
    pub fn start_of(seq: u64) -> LogPos {
        LogPos {
            seq,
            offset: SEGMENT_HEADER_LEN as u64,
        }
    }

    /// Where a batch goes when the log's end is at `self`.
    pub fn place(self, segment_size: u64) -> LogPos {
        let has_records = self.offset > SEGMENT_HEADER_LEN as u64;
        if has_records && self.offset >= segment_size {
            LogPos::start_of(self.seq + 1)
        } else {
            self
        }
    }

    /// The position `len` bytes further in the same segment.
    pub fn advance(self, len: u64) -> LogPos {
        LogPos {
            seq: self.seq,
            offset: self.offset + len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_starts_a_new_segment_only_once_the_nominal_size_is_reached() {
        let start = LogPos::start_of(3);
        assert_eq!(start.place(1), start, "a fresh segment takes any batch");
        assert_eq!(start.advance(50).place(1000), start.advance(50));
        let full = LogPos {
            seq: 3,
            offset: 1000,
        };
        assert_eq!(full.place(1000), LogPos::start_of(4));
        let over = LogPos {
            seq: 3,
            offset: 5000,
        };
        assert_eq!(over.place(100), LogPos::start_of(4));
    }
}
