//! The reserve: disk space the WAL thread holds so that a full disk refuses
//! new writes instead of failing one half-way.
//!
//! The reserve is the next segment, preallocated (`segment_size` bytes)
//! while the active segment is fully allocated. The writer publishes
//! whether it holds one ([`Shared::reserved`]); the engine admits writes
//! only while it does, so when the disk fills up new requests get an error
//! and the log on disk stays whole. What the reserve pays for:
//! - the rollover: the next batch placed in a new segment finds it ready;
//! - the batch that runs past the active segment's nominal size: if growing
//!   the file fails for want of space, the reserve is given back to the
//!   file system and the growth tried once more.
//!
//! Invariants:
//! - `reserved` is true only while `next` is a preallocated segment and the
//!   active one is allocated to at least `segment_size`;
//! - a failed attempt to reserve is never fatal (nothing was written) and
//!   is not repeated after every batch: it waits for the engine to ask
//!   again ([`crate::WalWriter::retry_reserve`]) or for the next rollover.

use std::io;
use std::sync::atomic::Ordering;

use tracing::{info, warn};

use crate::error::{io_err, WalError};
use crate::writer::segment::preallocate;
use crate::writer::WalThread;

impl WalThread {
    /// Preallocates what the reserve lacks, unless an attempt already
    /// failed since the last rollover or request.
    pub(crate) fn ensure_reserve(&mut self) {
        if self.prealloc_failed || self.holds_reserve() {
            return;
        }
        if let Err(e) = self.try_reserve() {
            warn!(error = %e, "cannot reserve space for the log: writes are refused until there is room");
            self.prealloc_failed = true;
        }
        self.publish_reserve();
    }

    /// The engine asks again (space may have been freed).
    pub(crate) fn retry_reserve(&mut self) {
        if self.holds_reserve() {
            return;
        }
        self.prealloc_failed = false;
        self.ensure_reserve();
        if self.holds_reserve() {
            info!("space for the log is reserved again: writes resume");
        }
    }

    fn try_reserve(&mut self) -> Result<(), WalError> {
        if self.active.seg.allocated < self.segment_size {
            self.active.allocate_to(self.segment_size)?;
        }
        if self.next.is_none() {
            let seq = self.active.seg.seq + 1;
            self.next = Some(preallocate(
                &*self.fs,
                &self.layout,
                seq,
                self.segment_size,
            )?);
        }
        Ok(())
    }

    fn holds_reserve(&self) -> bool {
        self.next.is_some() && self.active.seg.allocated >= self.segment_size
    }

    pub(crate) fn publish_reserve(&self) {
        self.shared
            .reserved
            .store(self.holds_reserve(), Ordering::Release);
    }

    /// Grows the active segment so `len` more bytes fit, spending the
    /// reserve if the disk is otherwise full.
    pub(crate) fn grow_active(&mut self, len: u64) -> Result<(), WalError> {
        match self.active.grow(len) {
            Err(WalError::Io { source, .. }) if is_no_space(&source) && self.next.is_some() => {
                warn!("the disk is full: spending the reserve to finish the segment");
                self.release_reserve()?;
                self.active.grow(len)
            }
            other => other,
        }
    }

    /// Removes the preallocated next segment, giving its space back.
    pub(crate) fn release_reserve(&mut self) -> Result<(), WalError> {
        let result = match self.next.take() {
            Some(next) => {
                drop(next.file);
                let dir = self.layout.wal_dir();
                self.fs
                    .remove(&next.path)
                    .map_err(io_err("remove", &next.path))
                    .and_then(|()| self.fs.sync_dir(&dir).map_err(io_err("fsync dir", &dir)))
            }
            None => Ok(()),
        };
        self.publish_reserve();
        result
    }
}

fn is_no_space(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::StorageFull
}
