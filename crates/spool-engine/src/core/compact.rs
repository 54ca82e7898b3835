//! Compaction: live payloads of mostly dead segments written again at the
//! log's end, so those segments can be reclaimed.
//!
//! A segment holds the payloads of tasks enqueued together; when nearly all
//! of them are done, the few left would keep the whole file. The checkpoint
//! walk already visits every task, so it picks them out (`CheckpointJob`
//! collects tasks in segments whose live payloads fell under a quarter of
//! those written there); afterwards the core copies them a slice per loop
//! turn, each slice one [`Op::Move`] record through the ordinary group
//! commit. Nothing else writes the log, so a crash anywhere leaves either the
//! old locator (the record was not durable) or the new one (it was), and the
//! old segment is reclaimed only by a checkpoint published after the move is
//! durable (`open_moved_from` keeps it pinned until its batch is submitted).

use spool_core::Payload;

use super::Core;
use crate::ops::{Moved, Op};
use crate::state::PayloadRef;

/// Most tasks, and payload bytes, moved per core-loop turn: a slice costs
/// about as much as a claim of the same size, so requests keep flowing.
const MOVE_SLICE: usize = 256;
const MOVE_SLICE_BYTES: usize = 4 * 1024 * 1024;

impl Core {
    /// True while compaction has work queued (the loop must not sleep).
    pub(crate) fn compaction_busy(&self) -> bool {
        !self.pending_moves.is_empty()
    }

    /// Moves one slice of the queued payloads.
    pub(crate) fn compact_step(&mut self) {
        if self.pending_moves.is_empty() || self.refuse_if_poisoned().is_err() || !self.can_write()
        {
            return;
        }
        let mut moves = Vec::new();
        let mut bytes = 0;
        while moves.len() < MOVE_SLICE && bytes < MOVE_SLICE_BYTES {
            let Some((id, from)) = self.pending_moves.pop_front() else {
                break;
            };
            let Some(e) = self.state.tasks.get(id) else {
                continue;
            };
            // Gone or rewritten since the walk picked it: nothing to move.
            if e.payload != from {
                continue;
            }
            let format = e.format();
            match self.payloads.read_prefixed(from.at()) {
                Ok(data) => {
                    bytes += data.len();
                    moves.push(Moved {
                        id,
                        from: from.at(),
                        payload: Payload {
                            format,
                            bytes: data.into(),
                        },
                    });
                }
                Err(e) => {
                    // Left where it is: still readable or not, moving it
                    // cannot help, and the segment simply stays.
                    tracing::warn!(task = id, error = %e, "compaction could not read a payload");
                }
            }
        }
        if moves.is_empty() {
            return;
        }
        self.open_moved_from
            .extend(moves.iter().map(|m| m.from.seq));
        metrics::counter!("spool_compaction_moved_total").increment(moves.len() as u64);
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
