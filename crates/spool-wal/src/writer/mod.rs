//! [`WalWriter`]: the handle to the WAL thread (a `std::thread`, so a
//! blocking `fdatasync` never sits on an async runtime's worker).
//!
//! Callbacks (`done`) run on the WAL thread, in submission order, after the
//! outcome is final: keep them short and non-blocking (send on a channel,
//! wake a task) — the next batch waits for them — and never panicking: a
//! panic there stops the WAL thread, after which submissions fail with
//! `WalError::WriterGone`.

mod byte_index;
mod reserve;
pub(crate) mod segment;
mod thread;

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;

use tracing::warn;

use crate::batch::BatchBuffer;
use crate::error::WalError;
use crate::fs::FsLock;
use crate::position::LogPos;
use crate::reader::SegmentReader;
use crate::snapshot::PendingSnapshot;

pub(crate) use byte_index::ByteIndex;
use thread::Command;
pub(crate) use thread::{Shared, WalThread};

/// Reports a batch's or checkpoint's final outcome.
pub type Done = Box<dyn FnOnce(Result<(), WalError>) + Send>;

/// Handle to the WAL thread. Dropping it stops the thread like
/// [`WalWriter::shutdown`], discarding the result.
#[derive(Debug)]
pub struct WalWriter {
    commands: Option<Sender<Command>>,
    thread: Option<JoinHandle<Result<(), WalError>>>,
    shared: Arc<Shared>,
    /// Where the first batch goes.
    start: LogPos,
    segment_size: u64,
    reader: Arc<SegmentReader>,
    /// The data directory's lock, released after the thread has stopped.
    _lock: Box<dyn FsLock>,
}

impl WalWriter {
    pub(crate) fn spawn(
        mut state: WalThread,
        lock: Box<dyn FsLock>,
    ) -> Result<WalWriter, WalError> {
        // Before the first batch, so the engine never mistakes a reserve
        // not yet made for a full disk.
        state.ensure_reserve();
        let shared = Arc::clone(&state.shared);
        let start = LogPos {
            seq: state.active.seg.seq,
            offset: state.active.write_pos,
        };
        let (segment_size, reader) = (state.segment_size, Arc::clone(&state.reader));
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("spool-wal".into())
            .spawn(move || state.run(rx))
            .map_err(|source| WalError::Io {
                op: "spawn WAL thread",
                path: Default::default(),
                source,
            })?;
        Ok(WalWriter {
            commands: Some(tx),
            thread: Some(thread),
            shared,
            start,
            segment_size,
            reader,
            _lock: lock,
        })
    }

    /// Where the first batch goes: batches then follow [`LogPos::place`]
    /// with this segment size, each right after the previous one.
    pub fn start_position(&self) -> (LogPos, u64) {
        (self.start, self.segment_size)
    }

    /// Reads back what the log wrote.
    pub fn reader(&self) -> Arc<SegmentReader> {
        Arc::clone(&self.reader)
    }

    /// Queues `batch`. The WAL thread writes it, fdatasyncs, and then calls
    /// `done(Ok(()))`; on failure `done(Err)` for it and every later batch.
    /// Batches must continue the log: `batch.first_lsn()` = the previous
    /// batch's `last_lsn() + 1` (else `WalError::OutOfOrder`, nothing written).
    pub fn submit(&self, batch: BatchBuffer, done: Done) {
        self.send(Command::Batch(batch, done));
    }

    /// Publishes a finished checkpoint once every batch submitted before it
    /// is durable, then deletes checkpoints older than the previous one and
    /// segments wholly below the previous one's start lsn.
    pub fn submit_snapshot(&self, snap: PendingSnapshot, done: Done) {
        self.send(Command::Snapshot(snap, done));
    }

    /// A cleared buffer from a completed batch, for [`BatchBuffer::with_buffer`].
    pub fn recycled_buffer(&self) -> Option<Vec<u8>> {
        self.shared
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
    }

    /// Whether the WAL thread holds its reserve of disk space (the next
    /// segment, preallocated). Without it a write may find the disk full
    /// half-way, so the engine refuses writes until this is true again.
    pub fn has_reserve(&self) -> bool {
        self.shared.reserved.load(Ordering::Acquire)
    }

    /// Asks the WAL thread to try again to reserve space (after
    /// [`WalWriter::has_reserve`] said false: space may have been freed).
    pub fn retry_reserve(&self) {
        self.send(Command::Reserve);
    }

    /// Whether a write or sync failed; if so nothing more will be written.
    pub fn is_poisoned(&self) -> bool {
        self.shared.poisoned.load(Ordering::Acquire)
    }

    /// Bytes of log written since the newest checkpoint's start lsn (to
    /// within 64 KiB, never less than the truth).
    pub fn bytes_since_snapshot(&self) -> u64 {
        self.shared.bytes_since_snapshot.load(Ordering::Relaxed)
    }

    /// Lets the thread finish what was submitted, stops it and releases the
    /// directory lock. `Err(Poisoned)` if a write or sync had failed.
    pub fn shutdown(mut self) -> Result<(), WalError> {
        self.stop()
    }

    fn send(&self, command: Command) {
        let Some(commands) = &self.commands else {
            return;
        };
        // Fails only if the thread died; then the caller hears it here.
        if let Err(mpsc::SendError(command)) = commands.send(command) {
            match command {
                Command::Batch(_, done) | Command::Snapshot(_, done) => {
                    done(Err(WalError::WriterGone))
                }
                Command::Reserve => {}
            }
        }
    }

    fn stop(&mut self) -> Result<(), WalError> {
        drop(self.commands.take());
        match self.thread.take() {
            Some(thread) => thread.join().unwrap_or(Err(WalError::WriterGone)),
            None => Ok(()),
        }
    }
}

impl Drop for WalWriter {
    fn drop(&mut self) {
        match self.stop() {
            Ok(()) | Err(WalError::Poisoned) => {}
            Err(e) => warn!(error = %e, "the WAL thread stopped with an error"),
        }
    }
}
