//! Checkpoints: copying state to a snapshot file while writes continue.
//!
//! The copy starts at lsn S (everything before S is in memory) and walks the
//! task slab a slice per core-loop turn, so requests keep flowing. Tasks may
//! change behind or ahead of the walk; that is fine because recovery loads
//! the snapshot and then replays the log from S, and ops are absolute. The
//! snapshot is published only once the log is durable up to the last lsn
//! the copy could have seen (E); the WAL thread then deletes what is no
//! longer needed.
//!
//! What the chunks hold is [`crate::snapshot`]'s.

use std::time::Instant;

use spool_core::StoreError;
use spool_wal::{PendingSnapshot, SnapshotWriter};
use tokio::sync::oneshot;

use super::{Core, Notice};
use crate::snapshot::SnapshotEncoder;
use crate::state::{PayloadRef, WalkFrom};

/// Compaction picks segments whose live payloads fell under 1/COMPACT_BELOW
/// of those written there: what it copies is then less than what it frees,
/// and the log settles near twice the live payloads.
const COMPACT_BELOW: u64 = 2;
/// Most tasks one checkpoint hands to compaction.
const COMPACT_MAX: u64 = 1_000_000;

/// Tasks copied per core-loop turn.
const SLICE: usize = 4096;

#[derive(Debug)]
enum Phase {
    Copying,
    /// The file is being finished (fsynced) off the core thread.
    Finishing,
    /// Written; waiting until the log is durable up to `end_lsn`.
    AwaitDurable(PendingSnapshot),
    Publishing,
}

#[derive(Debug)]
pub(crate) struct CheckpointJob {
    writer: Option<SnapshotWriter>,
    phase: Phase,
    /// Where the walk of the task table resumes; `None` once done.
    next: Option<WalkFrom>,
    /// Segments to compact, and the tasks the walk found in them.
    compact: Vec<u64>,
    moves: Vec<(u64, PayloadRef)>,
    encoder: SnapshotEncoder,
    end_lsn: u64,
    waiting: Vec<oneshot::Sender<Result<(), StoreError>>>,
}

impl Core {
    /// Segments worth compacting now (ascending): not the one being
    /// written, and few of their payloads still live; at most
    /// [`COMPACT_MAX`] tasks in all.
    fn compaction_candidates(&self) -> Vec<u64> {
        let mut found: Vec<(u64, u64)> = self
            .state
            .segments
            .iter()
            .filter(|(&seq, used)| {
                seq < self.log_end.seq && used.live * COMPACT_BELOW < used.written
            })
            .map(|(&seq, used)| (seq, used.live))
            .collect();
        found.sort_unstable();
        let mut total = 0;
        found.retain(|&(_, live)| {
            total += live;
            total <= COMPACT_MAX
        });
        found.into_iter().map(|(seq, _)| seq).collect()
    }

    /// Starts a checkpoint when enough log has accumulated since the last,
    /// unless the last one failed too recently (`backoff.rs`).
    pub(crate) fn maybe_start_checkpoint(&mut self) {
        if self.checkpoint.is_none()
            && self.wal.bytes_since_snapshot() >= self.settings.checkpoint_bytes
            && self.checkpoint_backoff.ready(Instant::now())
        {
            self.start_checkpoint(None);
        }
    }

    /// Starts a checkpoint now (or joins the running one); `reply` hears
    /// when it is published. An explicit request does not wait out the
    /// backoff after a failure; its outcome counts like any other.
    pub(crate) fn start_checkpoint(
        &mut self,
        reply: Option<oneshot::Sender<Result<(), StoreError>>>,
    ) {
        if let Err(e) = self.refuse_if_poisoned() {
            if let Some(r) = reply {
                let _ = r.send(Err(e));
            }
            return;
        }
        if let Some(job) = &mut self.checkpoint {
            job.waiting.extend(reply);
            return;
        }
        let start_lsn = self.next_lsn;
        let writer =
            match SnapshotWriter::create(self.settings.fs.clone(), &self.settings.dir, start_lsn) {
                Ok(w) => w,
                Err(e) => {
                    let retry_in = self.checkpoint_backoff.failed(Instant::now());
                    tracing::error!(error = %e, ?retry_in, "cannot start a checkpoint");
                    if let Some(r) = reply {
                        let _ =
                            r.send(Err(StoreError::Internal(format!("checkpoint failed: {e}"))));
                    }
                    return;
                }
            };
        tracing::info!(
            start_lsn,
            tasks = self.state.tasks.len(),
            "checkpoint started"
        );
        let mut job = CheckpointJob {
            writer: Some(writer),
            phase: Phase::Copying,
            next: Some(WalkFrom::Pages(0)),
            compact: self.compaction_candidates(),
            moves: Vec::new(),
            encoder: SnapshotEncoder::default(),
            end_lsn: 0,
            waiting: reply.into_iter().collect(),
        };
        let mut buf = Vec::new();
        job.encoder.header(&self.state, self.last_now, &mut buf);
        self.checkpoint = Some(job);
        self.write_chunk(&buf);
    }

    /// True while the copy still has slices to do (the loop must not sleep).
    pub(crate) fn checkpoint_busy(&self) -> bool {
        matches!(
            self.checkpoint.as_ref().map(|j| &j.phase),
            Some(Phase::Copying) | Some(Phase::AwaitDurable(_))
        )
    }

    fn write_chunk(&mut self, chunk: &[u8]) {
        let result = match self.checkpoint.as_mut().and_then(|j| j.writer.as_mut()) {
            Some(w) => w.append_chunk(chunk).map_err(|e| e.to_string()),
            None => Ok(()),
        };
        if let Err(e) = result {
            self.checkpoint_failed(e);
        }
    }

    /// One slice of the running checkpoint, between requests.
    pub(crate) fn checkpoint_step(&mut self) {
        let Some(job) = self.checkpoint.as_mut() else {
            return;
        };
        match &job.phase {
            Phase::Copying => {}
            Phase::AwaitDurable(_) if self.submitted_lsn >= job.end_lsn => {
                if let Phase::AwaitDurable(mut pending) =
                    std::mem::replace(&mut job.phase, Phase::Publishing)
                {
                    // Pinned now, not when the copy began: a segment whose
                    // last payload died meanwhile can go too (no task the
                    // replay keeps points there).
                    let mut pinned = self.state.pinned_segments();
                    pinned.extend_from_slice(&self.open_moved_from);
                    pending.pin_segments(pinned);
                    let notices = self.notices_tx.clone();
                    self.wal.submit_snapshot(
                        pending,
                        Box::new(move |r| {
                            let _ = notices
                                .send(Notice::CheckpointPublished(r.map_err(|e| e.to_string())));
                        }),
                    );
                }
                return;
            }
            _ => return,
        }
        let mut buf = Vec::with_capacity(256 * 1024);
        job.encoder.tables(&self.state, &mut buf);
        let mut left = SLICE;
        while left > 0 {
            let Some(from) = job.next else {
                break;
            };
            let (entries, next) = self.state.tasks.walk(from, left);
            left -= entries.len().min(left);
            for (id, e) in entries {
                let group = self.state.group_of(id);
                SnapshotEncoder::entry(id, e, self.state.tasks.extra(id), group, &mut buf);
                if job.compact.binary_search(&e.payload.seq()).is_ok() {
                    job.moves.push((id, e.payload));
                }
            }
            job.next = next;
            if matches!(next, Some(WalkFrom::Sparse(0))) && matches!(from, WalkFrom::Pages(_)) {
                // The pages are done: the sparse map in the next turn.
                break;
            }
        }
        let done = job.next.is_none();
        if done {
            job.encoder.tail(&self.state, &mut buf);
        }
        self.write_chunk(&buf);
        if done {
            self.finish_copy();
        }
    }

    /// The copy is complete: fsync the file off the core thread.
    fn finish_copy(&mut self) {
        let end_lsn = self.next_lsn.saturating_sub(1);
        let Some(job) = self.checkpoint.as_mut() else {
            return;
        };
        job.end_lsn = end_lsn;
        job.phase = Phase::Finishing;
        let moves = std::mem::take(&mut job.moves);
        let Some(writer) = job.writer.take() else {
            return;
        };
        self.queue_moves(moves);
        let notices = self.notices_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("spool-checkpoint".into())
            .spawn(move || {
                let r = writer.finish().map_err(|e| e.to_string());
                let _ = notices.send(Notice::CheckpointWritten(r));
            });
        if let Err(e) = spawned {
            self.checkpoint_failed(format!("cannot start the checkpoint thread: {e}"));
        }
    }

    pub(crate) fn checkpoint_written(&mut self, result: Result<PendingSnapshot, String>) {
        match result {
            Ok(pending) => {
                if let Some(job) = self.checkpoint.as_mut() {
                    job.phase = Phase::AwaitDurable(pending);
                }
            }
            Err(e) => self.checkpoint_failed(e),
        }
    }

    pub(crate) fn checkpoint_published(&mut self, result: Result<(), String>) {
        match result {
            Ok(()) => {
                self.checkpoint_backoff.succeeded();
                if let Some(job) = self.checkpoint.take() {
                    tracing::info!(end_lsn = job.end_lsn, "checkpoint published");
                    for w in job.waiting {
                        let _ = w.send(Ok(()));
                    }
                }
            }
            Err(e) => self.checkpoint_failed(e),
        }
    }

    /// A failed checkpoint loses nothing (the log still has everything);
    /// it is abandoned (dropping its writer removes the file) and tried
    /// again after the backoff.
    fn checkpoint_failed(&mut self, why: String) {
        let retry_in = self.checkpoint_backoff.failed(Instant::now());
        tracing::error!(error = %why, ?retry_in, "checkpoint failed");
        if let Some(job) = self.checkpoint.take() {
            for w in job.waiting {
                let _ = w.send(Err(StoreError::Internal(format!(
                    "checkpoint failed: {why}"
                ))));
            }
        }
    }
}
