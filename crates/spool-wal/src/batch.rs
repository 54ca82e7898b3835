//! [`BatchBuffer`]: one group commit under construction.
//!
//! The engine's core thread owns it and encodes records straight into its
//! buffer (no intermediate allocation or copy); the WAL thread then writes
//! the whole buffer with one `write` and one `fdatasync`.
//!
//! Invariants: the first record is always the batch marker (kind
//! [`RECORD_BATCH`], body = wall clock ms) at `first_lsn`; every later record
//! takes the next LSN, so a batch covers `first_lsn..=last_lsn()` with no gap.

use crate::position::LogPos;
use crate::record::{finish_record, start_record, MAX_RECORD_LEN, RECORD_BATCH};

/// A group-commit batch under construction.
#[derive(Debug)]
pub struct BatchBuffer {
    buf: Vec<u8>,
    first_lsn: u64,
    next_lsn: u64,
    /// The first record whose body is over [`MAX_RECORD_LEN`]: (lsn, len).
    /// Such a batch is refused by the writer rather than written undecodable.
    oversized: Option<(u64, usize)>,
    /// Where the caller expects the batch to land ([`LogPos::place`]); the
    /// writer refuses to put it anywhere else.
    placement: Option<LogPos>,
}

impl BatchBuffer {
    /// A batch whose marker takes `first_lsn`.
    pub fn new(first_lsn: u64, wall_clock_ms: i64) -> BatchBuffer {
        BatchBuffer::with_buffer(Vec::new(), first_lsn, wall_clock_ms)
    }

    /// Like [`BatchBuffer::new`], reusing `buf`'s allocation (its contents
    /// are discarded).
    pub fn with_buffer(mut buf: Vec<u8>, first_lsn: u64, wall_clock_ms: i64) -> BatchBuffer {
        buf.clear();
        let mut batch = BatchBuffer {
            buf,
            first_lsn,
            next_lsn: first_lsn,
            oversized: None,
            placement: None,
        };
        batch.push(RECORD_BATCH, |b| {
            b.extend_from_slice(&wall_clock_ms.to_le_bytes())
        });
        batch
    }

    /// Frames one record: `body` appends the record's body to the buffer it
    /// is given (and must not touch what is already there). Returns the
    /// record's LSN.
    ///
    /// # Panics
    /// If `kind` is [`RECORD_BATCH`]: markers are the log's own (a caller
    /// bug, never input-dependent).
    pub fn append(&mut self, kind: u8, body: impl FnOnce(&mut Vec<u8>)) -> u64 {
        assert_ne!(kind, RECORD_BATCH, "kind 0 is reserved for batch markers");
        self.push(kind, body)
    }

    fn push(&mut self, kind: u8, body: impl FnOnce(&mut Vec<u8>)) -> u64 {
        let lsn = self.next_lsn;
        let start = start_record(&mut self.buf, lsn, kind);
        body(&mut self.buf);
        let body_len = finish_record(&mut self.buf, start);
        if body_len > MAX_RECORD_LEN && self.oversized.is_none() {
            self.oversized = Some((lsn, body_len));
        }
        self.next_lsn += 1;
        lsn
    }

    /// LSN of the batch marker.
    pub fn first_lsn(&self) -> u64 {
        self.first_lsn
    }

    /// LSN of the last record (the marker's if nothing was appended).
    pub fn last_lsn(&self) -> u64 {
        self.next_lsn - 1
    }

    /// Encoded size in bytes.
    pub fn byte_len(&self) -> usize {
        self.buf.len()
    }

    /// Records in the batch, the marker included.
    pub fn record_count(&self) -> usize {
        (self.next_lsn - self.first_lsn) as usize
    }

    /// The encoded records, as they will be written.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Pins where the batch must be written: positions computed from it
    /// (payload locators) then hold once it is durable.
    pub fn set_placement(&mut self, at: LogPos) {
        self.placement = Some(at);
    }

    pub(crate) fn placement(&self) -> Option<LogPos> {
        self.placement
    }

    pub(crate) fn oversized(&self) -> Option<(u64, usize)> {
        self.oversized
    }

    /// Gives the allocation back for reuse.
    pub fn into_buffer(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::record::decode_record;

    #[test]
    fn records_are_framed_back_to_back_with_consecutive_lsns() {
        let mut batch = BatchBuffer::new(10, -5);
        assert_eq!(batch.append(3, |b| b.extend_from_slice(b"abc")), 11);
        assert_eq!(batch.append(4, |_| {}), 12);
        assert_eq!((batch.first_lsn(), batch.last_lsn()), (10, 12));
        assert_eq!(batch.record_count(), 3);

        let mut at = 0;
        let mut seen = Vec::new();
        while at < batch.byte_len() {
            let rec = decode_record(&batch.as_bytes()[at..]).unwrap();
            at += rec.framed_len();
            seen.push((rec.lsn, rec.kind, rec.body.to_vec()));
        }
        assert_eq!(at, batch.byte_len());
        assert_eq!(
            seen,
            vec![
                (10, RECORD_BATCH, (-5i64).to_le_bytes().to_vec()),
                (11, 3, b"abc".to_vec()),
                (12, 4, vec![]),
            ]
        );
    }

    #[test]
    fn with_buffer_discards_old_contents() {
        let old = BatchBuffer::new(1, 0).into_buffer();
        let batch = BatchBuffer::with_buffer(old, 7, 9);
        assert_eq!(batch.record_count(), 1);
        assert_eq!(
            decode_record(batch.as_bytes()).unwrap().batch_clock(),
            Some(9)
        );
    }
}
