//! Counting the log bytes written since the newest checkpoint's start lsn,
//! which the engine uses to decide when to checkpoint again.
//!
//! A checkpoint's start lsn lies somewhere in the past, so the writer keeps
//! sparse (lsn, bytes-so-far) marks — one per `MARK_EVERY` (64 KiB) bytes — and
//! answers to within that granularity (over-estimating, never under).
//! Marks older than the newest checkpoint are dropped, so memory stays
//! proportional to the log written since it.

use std::collections::VecDeque;

const MARK_EVERY: u64 = 64 * 1024;

#[derive(Debug)]
pub(crate) struct ByteIndex {
    /// Bytes written, counting from the replay start.
    total: u64,
    /// `total` at the newest checkpoint's start lsn.
    base: u64,
    /// (lsn, total before the batch starting at that lsn), ascending.
    marks: VecDeque<(u64, u64)>,
}

impl ByteIndex {
    /// `replayed` bytes lie before `next_lsn`, counted from the newest
    /// checkpoint (or the log's start).
    pub(crate) fn new(next_lsn: u64, replayed: u64) -> ByteIndex {
        ByteIndex {
            total: replayed,
            base: 0,
            marks: VecDeque::from([(next_lsn, replayed)]),
        }
    }

    pub(crate) fn record(&mut self, first_lsn: u64, len: u64) {
        if self
            .marks
            .back()
            .is_none_or(|&(_, at)| self.total - at >= MARK_EVERY)
        {
            self.marks.push_back((first_lsn, self.total));
        }
        self.total += len;
    }

    pub(crate) fn checkpointed(&mut self, start_lsn: u64) {
        let covering = self.marks.partition_point(|&(lsn, _)| lsn <= start_lsn);
        self.base = match covering.checked_sub(1) {
            Some(i) => {
                self.marks.drain(..i);
                self.marks[0].1
            }
            // Older than anything written since open: count it all.
            None => 0,
        };
    }

    pub(crate) fn since_checkpoint(&self) -> u64 {
        self.total - self.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_the_checkpoint_within_one_mark() {
        let mut index = ByteIndex::new(1, 500);
        assert_eq!(index.since_checkpoint(), 500);
        let batch = MARK_EVERY / 4;
        for i in 0..16 {
            index.record(1 + i * 10, batch);
        }
        index.checkpointed(81);
        // Batches from lsn 81 on: the last 8.
        let exact = 8 * batch;
        let since = index.since_checkpoint();
        assert!(since >= exact && since <= exact + MARK_EVERY, "{since}");
        index.checkpointed(1_000_000);
        assert!(index.since_checkpoint() <= MARK_EVERY);
        assert!(index.marks.len() <= 2);
    }
}
