//! One task as the engine holds it in memory: a fixed 40-byte record.
//!
//! Only what claims, timers, leases, keys and counts need is here. The
//! payload stays in the log segment that wrote it ([`PayloadRef`]); what few
//! tasks carry beyond the common case (a key, a lease, errors, their own
//! lease time, trace context, dependencies, a change since enqueue) sits in
//! a side table ([`Extra`]), and a group in the task table beside the
//! record, so
//! a plain waiting task costs its record and one id in its queue's ready
//! index.

use std::sync::Arc;

use spool_core::{Dependencies, ErrorRecord, PayloadFormat, TaskKey, TaskState, Timestamp};
use spool_wal::LogPos;

/// Where a task's payload lives in the log: the position of its encoded
/// form (a u32 length, then the bytes), as the log record holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PayloadRef {
    seq: u32,
    offset: u32,
}

impl PayloadRef {
    /// The payload encoded at `at`. Segments stay far below 4 GiB and their
    /// seqs below 2^32 (one per 64 MiB written: 256 PiB), so both fit 32 bits.
    pub(crate) fn new(at: LogPos) -> Self {
        PayloadRef {
            seq: at.seq as u32,
            offset: at.offset as u32,
        }
    }

    pub(crate) fn at(&self) -> LogPos {
        LogPos {
            seq: u64::from(self.seq),
            offset: u64::from(self.offset),
        }
    }

    pub(crate) fn seq(&self) -> u64 {
        u64::from(self.seq)
    }
}

/// Bits of [`Entry::flags`].
pub(crate) mod flag {
    /// The payload was given as JSON (else bytes).
    pub(crate) const JSON: u8 = 1;
    /// The task has an [`super::Extra`].
    pub(crate) const EXTRA: u8 = 2;
    /// In its lane's FIFO of the ready index.
    pub(crate) const IN_FIFO: u8 = 4;
    /// In its lane's ordered side set of the ready index.
    pub(crate) const IN_SIDE: u8 = 8;
    /// A stale copy of its id may still sit in a FIFO: never join one again.
    pub(crate) const NO_FIFO: u8 = 16;
}

#[derive(Debug, Clone)]
pub(crate) struct LeaseSlot {
    pub owner: Arc<str>,
    pub token: u64,
    pub expires_at: Timestamp,
}

/// Queues and kinds a store can hold: their indexes are 16 bits in every
/// task record, which keeps a record at 40 bytes.
pub(crate) const MAX_QUEUES: usize = 1 << 16;
pub(crate) const MAX_KINDS: usize = 1 << 16;

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub run_at: Timestamp,
    pub created_at: Timestamp,
    pub payload: PayloadRef,
    pub attempt: u32,
    pub max_attempts: u32,
    /// Index into the engine's queue table (at most [`MAX_QUEUES`]).
    pub queue: u16,
    /// Index into the engine's interned kinds (at most [`MAX_KINDS`]).
    pub kind: u16,
    pub priority: i16,
    /// Scheduled vs ready is decided when the entry is attached, from run_at.
    pub state: TaskState,
    pub flags: u8,
}

impl Entry {
    pub(crate) fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    pub(crate) fn queue(&self) -> u32 {
        u32::from(self.queue)
    }

    pub(crate) fn kind(&self) -> u32 {
        u32::from(self.kind)
    }

    pub(crate) fn format(&self) -> PayloadFormat {
        if self.has(flag::JSON) {
            PayloadFormat::Json
        } else {
            PayloadFormat::Binary
        }
    }
}

/// What a task carries beyond the common case.
#[derive(Debug, Clone)]
pub(crate) struct Extra {
    pub updated_at: Timestamp,
    pub key: Option<TaskKey>,
    pub lease_ms: Option<u64>,
    pub lease: Option<LeaseSlot>,
    /// The last failures (at most five).
    pub errors: Vec<ErrorRecord>,
    /// How many failures the task has recorded, ever: the number of the
    /// last (see [`crate::ops::Failure`]).
    pub failures: u64,
    /// The W3C traceparent given at enqueue.
    pub traceparent: Option<Box<str>>,
    /// The tasks it waits for, and how those that ended did.
    pub deps: Option<Box<Dependencies>>,
}

impl Extra {
    pub(crate) fn new(updated_at: Timestamp) -> Self {
        Extra {
            updated_at,
            key: None,
            lease_ms: None,
            lease: None,
            errors: Vec::new(),
            failures: 0,
            traceparent: None,
            deps: None,
        }
    }

    /// Whether it holds nothing beyond what a task without extra fields
    /// shows (no change since its creation at `created_at`).
    pub(crate) fn is_bare(&self, created_at: Timestamp) -> bool {
        self.updated_at == created_at
            && self.key.is_none()
            && self.lease_ms.is_none()
            && self.lease.is_none()
            && self.errors.is_empty()
            && self.failures == 0
            && self.traceparent.is_none()
            && self.deps.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_40_bytes_and_its_option_no_bigger() {
        assert_eq!(std::mem::size_of::<Entry>(), 40);
        assert_eq!(std::mem::size_of::<Option<Entry>>(), 40);
    }
}
