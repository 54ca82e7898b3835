//! Task payloads of the requested size, optionally stamped with the instant
//! their enqueue began so a consumer can tell how long the task took to
//! reach it.
//!
//! The stamp is nanoseconds since this run's epoch, little-endian, in the
//! first 8 bytes. Producers and consumers share the process, so one
//! monotonic clock serves both.

use std::time::{Duration, Instant};

use bytes::Bytes;
use spool_core::{NewTask, Payload};

const STAMP_LEN: usize = 8;

#[derive(Debug)]
pub(crate) struct Payloads {
    epoch: Instant,
    /// Filler that does not compress to nothing, shared by every task.
    template: Bytes,
}

impl Payloads {
    /// `size` must be at least 8 (`--payload-bytes` enforces it).
    pub(crate) fn new(size: usize) -> Payloads {
        // A fixed xorshift sequence: the same bytes every run.
        let mut x: u32 = 0x9e37_79b9;
        let template = (0..size.max(STAMP_LEN))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x.to_le_bytes()[0]
            })
            .collect::<Vec<u8>>();
        Payloads {
            epoch: Instant::now(),
            template: Bytes::from(template),
        }
    }

    /// `n` tasks sharing one unstamped payload (no copy per task).
    pub(crate) fn plain(&self, n: u64) -> Vec<NewTask> {
        self.tasks(self.template.clone(), n)
    }

    /// `n` tasks sharing one payload stamped with now.
    pub(crate) fn stamped(&self, n: u64) -> Vec<NewTask> {
        let mut bytes = self.template.to_vec();
        let nanos = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        bytes[..STAMP_LEN].copy_from_slice(&nanos.to_le_bytes());
        self.tasks(Bytes::from(bytes), n)
    }

    /// The instant the payload was stamped, if it carries a stamp.
    pub(crate) fn stamp(&self, payload: &[u8]) -> Option<Instant> {
        let stamp: [u8; STAMP_LEN] = payload.get(..STAMP_LEN)?.try_into().ok()?;
        Some(self.epoch + Duration::from_nanos(u64::from_le_bytes(stamp)))
    }

    fn tasks(&self, bytes: Bytes, n: u64) -> Vec<NewTask> {
        (0..n)
            .map(|_| NewTask::new(Payload::binary(bytes.clone())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_reads_back_as_the_instant_it_was_made() {
        let p = Payloads::new(100);
        let before = Instant::now();
        let tasks = p.stamped(3);
        let after = Instant::now();
        assert_eq!(tasks.len(), 3);
        let bytes = &tasks[0].payload.bytes;
        assert_eq!(bytes.len(), 100);
        let at = p.stamp(bytes);
        // Nanosecond truncation may put the stamp just before `before`.
        assert!(at.is_some_and(|at| at + Duration::from_micros(1) >= before && at <= after));
        assert_eq!(p.stamp(&[1, 2, 3]), None);
    }

    #[test]
    fn plain_payloads_have_the_requested_size() {
        let p = Payloads::new(256);
        assert!(p.plain(2).iter().all(|t| t.payload.len() == 256));
    }
}
