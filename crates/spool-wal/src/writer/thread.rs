//! The WAL thread: takes commands in submission order and, per batch, does
//! one write and one `fdatasync`, then reports.
//!
//! Invariants:
//! - exactly one batch is ever unsynced: the next batch is not written until
//!   the previous one's sync returned. Recovery's torn-versus-corrupt rule
//!   depends on it, so batches are never coalesced into one sync here — the
//!   engine batches instead (it fills the next buffer while this one syncs);
//! - a failed write or sync poisons the thread for good: that batch and
//!   every later one get an error, nothing is retried (a retried fsync can
//!   report success for data the kernel already dropped);
//! - a checkpoint is published only after every batch before it is durable,
//!   and never after a failure (it could hold state the log lost);
//! - the reserve (`reserve.rs`) is replenished before a batch is reported,
//!   so the engine, which reads it after each batch, never sees it missing
//!   only because the WAL thread had not got round to it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::error;

use crate::batch::BatchBuffer;
use crate::error::{io_err, WalError};
use crate::fs::Fs;
use crate::layout::Layout;
use crate::position::LogPos;
use crate::reader::SegmentReader;
use crate::record::MAX_RECORD_LEN;
use crate::segment::SEGMENT_HEADER_LEN;
use crate::snapshot::{publish, KeptSegment, PendingSnapshot, Retention};
use crate::writer::byte_index::ByteIndex;
use crate::writer::segment::{preallocate, start, ActiveSegment, SegmentFile};
use crate::writer::Done;

/// Buffers kept for reuse; the engine double-buffers, so a few suffice.
const POOL_MAX: usize = 2;
/// A buffer grown by an outsized batch is freed rather than kept.
const POOL_MAX_CAPACITY: usize = 16 * 1024 * 1024;

pub(crate) enum Command {
    Batch(BatchBuffer, Done),
    Snapshot(PendingSnapshot, Done),
    /// Try again to reserve space (the engine saw none).
    Reserve,
}

/// State the handle reads without a round trip to the thread.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub poisoned: AtomicBool,
    /// The writer holds the reserve: the engine may admit writes.
    pub reserved: AtomicBool,
    pub bytes_since_snapshot: AtomicU64,
    pub pool: Mutex<Vec<Vec<u8>>>,
}

#[derive(Debug)]
pub(crate) struct WalThread {
    pub fs: Arc<dyn Fs>,
    pub layout: Layout,
    pub instance: u128,
    pub segment_size: u64,
    pub active: ActiveSegment,
    pub next_lsn: u64,
    pub retention: Retention,
    pub bytes: ByteIndex,
    pub shared: Arc<Shared>,
    /// The next segment, preallocated ahead of need: the reserve.
    pub next: Option<SegmentFile>,
    /// Reserving failed since the last rollover: wait for the rollover or
    /// the engine's request to try again rather than retry after every batch.
    pub prealloc_failed: bool,
    /// Told when a segment is deleted or emptied.
    pub reader: Arc<SegmentReader>,
}

impl WalThread {
    pub(crate) fn run(mut self, commands: Receiver<Command>) -> Result<(), WalError> {
        for command in commands {
            match command {
                Command::Batch(batch, done) => self.commit(batch, done),
                Command::Snapshot(snap, done) => {
                    let result = self.publish(snap);
                    done(result);
                }
                Command::Reserve if !self.poisoned() => self.retry_reserve(),
                Command::Reserve => {}
            }
        }
        self.close()
    }

    fn poisoned(&self) -> bool {
        self.shared.poisoned.load(Ordering::Acquire)
    }

    fn commit(&mut self, batch: BatchBuffer, done: Done) {
        let result = self.try_commit(&batch);
        self.recycle(batch);
        if !self.poisoned() {
            self.ensure_reserve();
        }
        done(result);
    }

    fn try_commit(&mut self, batch: &BatchBuffer) -> Result<(), WalError> {
        if self.poisoned() {
            return Err(WalError::Poisoned);
        }
        if batch.first_lsn() != self.next_lsn {
            return Err(WalError::OutOfOrder {
                expected: self.next_lsn,
                found: batch.first_lsn(),
            });
        }
        if let Some((_, len)) = batch.oversized() {
            return Err(WalError::TooLarge {
                what: "record",
                len,
                max: MAX_RECORD_LEN,
            });
        }
        let len = batch.byte_len() as u64;
        let end = LogPos {
            seq: self.active.seg.seq,
            offset: self.active.write_pos,
        };
        let at = end.place(self.segment_size);
        if let Some(expected) = batch.placement().filter(|&p| p != at) {
            return Err(WalError::Misplaced {
                expected,
                found: at,
            });
        }
        let written = self
            .make_room(at, len)
            .and_then(|()| self.active.append(batch.as_bytes()));
        if let Err(e) = written {
            error!(error = %e, "the log failed to write; it accepts no more writes");
            self.shared.poisoned.store(true, Ordering::Release);
            return Err(e);
        }
        self.next_lsn = batch.last_lsn() + 1;
        self.bytes.record(batch.first_lsn(), len);
        self.shared
            .bytes_since_snapshot
            .store(self.bytes.since_checkpoint(), Ordering::Relaxed);
        Ok(())
    }

    /// Makes sure a batch of `len` bytes can be written at `at`: the next
    /// segment is started if the rule placed it there, and the allocation
    /// grows to fit a batch that runs past it.
    fn make_room(&mut self, at: LogPos, len: u64) -> Result<(), WalError> {
        if at.seq == self.active.seg.seq {
            if self.active.room() < len {
                self.grow_active(len)?;
            }
            return Ok(());
        }
        self.active.finish()?;
        let needed = SEGMENT_HEADER_LEN as u64 + len;
        let next = self.next.take();
        self.publish_reserve();
        let mut seg = match next {
            Some(seg) => seg,
            None => preallocate(
                &*self.fs,
                &self.layout,
                self.active.seg.seq + 1,
                self.segment_size.max(needed),
            )?,
        };
        if seg.allocated < needed {
            seg.file
                .allocate(needed)
                .map_err(io_err("fallocate", &seg.path))?;
            seg.allocated = needed;
        }
        self.active = start(seg, self.next_lsn, self.instance)?;
        self.retention.segments.push_back(KeptSegment::new(
            self.next_lsn,
            self.active.seg.seq,
            self.active.seg.path.clone(),
        ));
        self.prealloc_failed = false;
        Ok(())
    }

    fn publish(&mut self, snap: PendingSnapshot) -> Result<(), WalError> {
        if self.poisoned() {
            return Err(WalError::Poisoned);
        }
        let newest = publish(
            &*self.fs,
            &self.layout,
            &mut self.retention,
            snap,
            &self.reader,
        )?;
        self.bytes.checkpointed(newest);
        self.shared
            .bytes_since_snapshot
            .store(self.bytes.since_checkpoint(), Ordering::Relaxed);
        Ok(())
    }

    fn recycle(&self, batch: BatchBuffer) {
        let mut pool = self
            .shared
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut buf = batch.into_buffer();
        if pool.len() < POOL_MAX && buf.capacity() <= POOL_MAX_CAPACITY {
            buf.clear();
            pool.push(buf);
        }
    }

    /// Removes the preallocated next segment, which would otherwise wait
    /// for recovery to delete it.
    fn close(mut self) -> Result<(), WalError> {
        if self.poisoned() {
            return Err(WalError::Poisoned);
        }
        self.release_reserve()
    }
}
