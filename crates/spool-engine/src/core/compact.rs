//! Compaction: live payloads of mostly dead segments written again at the
//! log's end, so those segments can be reclaimed.
//!
//! A segment holds the payloads of tasks enqueued together; when nearly all
//! of them are done, the few left would keep the whole file. The checkpoint
//! walk already visits every task, so it picks them out (`CheckpointJob`
//! collects tasks in segments whose live payloads fell under half of those
//! written there). The payloads are read on a thread of their own, a slice
//! at a time, so a read that misses the page cache never stalls the core;
//! the core then writes each slice as one [`Op::Move`] record through the
//! ordinary group commit. Nothing else writes the log, so a crash anywhere
//! leaves either the old locator (the record was not durable) or the new one
//! (it was), and the old segment is reclaimed only by a checkpoint published
//! after the move is durable (`open_moved_from` keeps it pinned until its
//! batch is submitted).
//!
//! A task may finish or change while its payload is being read: the core
//! drops such moves before committing, and `apply` checks again that each
//! task still points where it was read, so replay agrees.

use std::sync::Arc;
use std::thread::JoinHandle;

use spool_core::{Payload, PayloadFormat};
use spool_wal::{LogPos, SegmentReader};

use super::{Core, Notice};
use crate::ops::{Moved, Op};
use crate::payload_runs::read_payloads;
use crate::state::PayloadRef;

/// Most tasks, and bytes read, per slice: writing a slice costs the core
/// about as much as a claim of the same size, so requests keep flowing.
const MOVE_SLICE: usize = 1024;
const MOVE_SLICE_BYTES: usize = 4 * 1024 * 1024;

/// A payload to copy: the task, where its payload is, and its format.
type ToRead = (u64, PayloadRef, PayloadFormat);

/// What the reader hands back for one slice.
pub(crate) struct SliceRead {
    moved: Vec<Moved>,
    /// Not read because the slice reached [`MOVE_SLICE_BYTES`].
    rest: Vec<ToRead>,
}

/// The thread that reads payloads for compaction.
pub(crate) struct Reader {
    slices: Option<flume::Sender<Vec<ToRead>>>,
    thread: Option<JoinHandle<()>>,
    /// A slice was sent and its answer has not come back.
    busy: bool,
}

impl Reader {
    /// Starts the thread; it answers on `notices`.
    pub(crate) fn start(payloads: Arc<SegmentReader>, notices: flume::Sender<Notice>) -> Reader {
        let (tx, rx) = flume::unbounded::<Vec<ToRead>>();
        let thread = std::thread::Builder::new()
            .name("spool-compact".into())
            .spawn(move || {
                for slice in rx.iter() {
                    let read = read_slice(&payloads, slice);
                    if notices.send(Notice::MovesRead(read)).is_err() {
                        return;
                    }
                }
            });
        let thread = match thread {
            Ok(t) => Some(t),
            Err(e) => {
                // Without the thread nothing is compacted: the log keeps
                // mostly dead segments longer, and nothing else changes.
                tracing::error!(error = %e, "cannot start the compaction thread; compaction is off");
                None
            }
        };
        Reader {
            slices: thread.as_ref().map(|_| tx),
            thread,
            busy: false,
        }
    }

    /// Stops the thread once its current slice is read.
    pub(crate) fn stop(&mut self) {
        self.slices.take();
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::error!("the compaction thread panicked");
            }
        }
    }
}

/// Reads a slice's payloads (in log order, a run of neighbours at a time)
/// until [`MOVE_SLICE_BYTES`] are read; the rest is handed back.
fn read_slice(payloads: &SegmentReader, slice: Vec<ToRead>) -> SliceRead {
    let positions: Vec<LogPos> = slice.iter().map(|(_, from, _)| from.at()).collect();
    let reads = read_payloads(payloads, &positions, MOVE_SLICE_BYTES);
    let mut moved = Vec::with_capacity(slice.len());
    let mut rest = Vec::new();
    for ((id, from, format), read) in slice.into_iter().zip(reads) {
        match read {
            Some(Ok(bytes)) => moved.push(Moved {
                id,
                from: from.at(),
                payload: Payload { format, bytes },
            }),
            Some(Err(e)) => {
                // Left where it is: still readable or not, moving it cannot
                // help, and the segment simply stays.
                tracing::warn!(task = id, error = %e, "compaction could not read a payload");
            }
            None => rest.push((id, from, format)),
        }
    }
    SliceRead { moved, rest }
}

impl Core {
    /// True while compaction has work the core must start (the loop must
    /// not sleep); a slice being read wakes the core by its notice.
    pub(crate) fn compaction_busy(&self) -> bool {
        !self.pending_moves.is_empty() && !self.compactor.busy && self.compactor.slices.is_some()
    }

    /// Sends the next slice of queued payloads to the reader.
    pub(crate) fn compact_step(&mut self) {
        if !self.compaction_busy() || self.refuse_if_poisoned().is_err() || !self.can_write() {
            return;
        }
        let mut slice = Vec::new();
        while slice.len() < MOVE_SLICE {
            let Some((id, from)) = self.pending_moves.pop_front() else {
                break;
            };
            // Gone or rewritten since the walk picked it: nothing to move.
            match self.state.tasks.get(id) {
                Some(e) if e.payload == from => slice.push((id, from, e.format())),
                _ => {}
            }
        }
        let Some(slices) = &self.compactor.slices else {
            return;
        };
        if slice.is_empty() {
            return;
        }
        // Read in log order: what the reader leaves for later is then the
        // tail of the slice, and goes back in front of the queue as it was.
        slice.sort_by_key(|(_, from, _)| from.at());
        if slices.send(slice).is_ok() {
            self.compactor.busy = true;
        }
    }

    /// Writes what the reader read, less the tasks that changed meanwhile.
    pub(crate) fn moves_read(&mut self, read: SliceRead) {
        self.compactor.busy = false;
        for item in read.rest.into_iter().rev() {
            self.pending_moves.push_front((item.0, item.1));
        }
        if self.refuse_if_poisoned().is_err() {
            return;
        }
        if !self.can_write() {
            // Read again once the log has room.
            for m in read.moved.into_iter().rev() {
                self.pending_moves
                    .push_front((m.id, PayloadRef::new(m.from)));
            }
            return;
        }
        let moves: Vec<Moved> = read
            .moved
            .into_iter()
            .filter(|m| {
                self.state
                    .tasks
                    .get(m.id)
                    .is_some_and(|e| e.payload.at() == m.from)
            })
            .collect();
        if moves.is_empty() {
            return;
        }
        self.open_moved_from
            .extend(moves.iter().map(|m| m.from.seq));
        metrics::counter!("spool_compaction_moved_total").increment(moves.len() as u64);
        metrics::counter!("spool_compaction_moved_bytes_total")
            .increment(moves.iter().map(|m| m.payload.len() as u64).sum());
        self.commit(Op::Move { moves });
    }

    /// Queues tasks a checkpoint walk found in segments worth compacting.
    pub(crate) fn queue_moves(&mut self, found: Vec<(u64, PayloadRef)>) {
        if !found.is_empty() {
            tracing::info!(
                tasks = found.len(),
                "compacting: moving live payloads out of mostly dead segments"
            );
        }
        self.pending_moves.extend(found);
    }
}
