//! Admission on a full disk: a change is accepted only while the log has
//! room to make it durable.
//!
//! The core applies a change to memory before the WAL thread writes it, so a
//! batch that fails for want of space cannot be taken back: it would poison
//! the log and stop the engine. Instead the WAL thread keeps a reserve (the
//! next segment, preallocated; `spool_wal`'s `writer/reserve.rs`) and the
//! core admits changes only while it holds one. Without it, every request
//! that would write answers `unavailable` and changes nothing; reads go on.
//! The core asks the WAL thread to try again at most every
//! [`RESERVE_RETRY`], so writing resumes by itself, without a restart, once
//! space is freed.
//!
//! Invariants:
//! - no batch placed in a new segment is opened while a batch is in flight
//!   that may spend the reserve (one that ends past the nominal segment
//!   size may need it to grow); the core waits for it instead
//!   ([`Core::must_wait_for_flight`]), so it never admits a change on a
//!   reserve that is already gone;
//! - a rollover in flight has spent the reserve on its new segment and
//!   takes the next one before it answers: a change that arrives meanwhile
//!   waits for that answer rather than being refused, so a disk with room
//!   never answers "full";
//! - what is admitted fits: the batch that crosses the nominal size can
//!   always grow into the reserve's space. A single batch larger than a
//!   whole segment on a disk with less free space than that can still fail,
//!   which stops the engine; it then opens again once space is freed.

use std::time::{Duration, Instant};

use spool_core::StoreError;
use spool_wal::LogPos;

use super::Core;

/// How often a core without a reserve asks the WAL thread to try again.
pub(super) const RESERVE_RETRY: Duration = Duration::from_millis(100);

impl Core {
    /// Where the next change goes: the open batch, or where the next one
    /// would be placed.
    fn write_target(&self) -> LogPos {
        match self.open {
            Some(_) => self.open_at,
            None => self.log_end.place(self.segment_size),
        }
    }

    /// A change now must wait for the batch in flight: it would open a
    /// batch in a new segment while that batch may still spend the reserve,
    /// or that batch is a rollover, which spends the reserve on its new
    /// segment and takes the next one before it answers (until then the
    /// reserve is missing, though the disk has room).
    pub(super) fn must_wait_for_flight(&self) -> bool {
        self.in_flight && (self.write_target().seq > self.log_end.seq || !self.wal.has_reserve())
    }

    /// Whether a change may be made now (internal ones skip their turn
    /// otherwise).
    pub(super) fn can_write(&mut self) -> bool {
        self.refuse_if_full().is_ok()
    }

    /// `unavailable` while the log has no room to make a change durable.
    /// Waits out a batch in flight first (see
    /// [`Core::must_wait_for_flight`]): only a reserve still missing after
    /// it means a full disk.
    pub(crate) fn refuse_if_full(&mut self) -> Result<(), StoreError> {
        if self.must_wait_for_flight() {
            self.finish_flight();
        }
        if self.wal.has_reserve() {
            return Ok(());
        }
        self.retry_reserve();
        Err(StoreError::Unavailable(
            "the disk is full: the log cannot reserve space for more writes".into(),
        ))
    }

    /// Asks the WAL thread to reserve space again, at most every
    /// [`RESERVE_RETRY`].
    pub(super) fn retry_reserve(&mut self) {
        if self.wal.has_reserve() {
            return;
        }
        let now = Instant::now();
        if now >= self.reserve_retry_at {
            self.reserve_retry_at = now + RESERVE_RETRY;
            self.wal.retry_reserve();
        }
    }
}
