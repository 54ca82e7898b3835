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
//! A chunk is a sequence of tagged items. Queues and kinds are referred to
//! by index; both tables only grow, so each chunk first defines the entries
//! added since the previous chunk.

use std::sync::Arc;
use std::time::Instant;

use spool_core::{
    ErrorRecord, Kind, QueueName, Schedule, StoreError, TaskKey, TaskState, Timestamp,
};
use spool_wal::{LogPos, PendingSnapshot, SnapshotWriter};
use tokio::sync::oneshot;

use crate::codec::{self, DecodeError, Reader};
use crate::core::{Core, Notice};
use crate::ops::{self, read_name};
use crate::state::{
    flag, Entry, Extra, LeaseSlot, PayloadRef, State, WalkFrom, MAX_KINDS, MAX_QUEUES,
};

const HEADER: u8 = 1;
const KIND: u8 = 2;
const QUEUE: u8 = 3;
/// A task with its payload inline: written by Spool before payloads stayed
/// in the log. Such a checkpoint cannot be loaded (see `load_chunk`).
const TASK_INLINE: u8 = 4;
const TOMBSTONE: u8 = 5;
const SCHEDULE: u8 = 6;
/// A task with its payload's log position.
const TASK: u8 = 7;
/// How many payloads were written in a segment that live tasks still use.
const SEGMENT: u8 = 8;

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
    kinds_written: usize,
    queues_written: usize,
    end_lsn: u64,
    waiting: Vec<oneshot::Sender<Result<(), StoreError>>>,
}

fn encode_tables(state: &State, job: &mut CheckpointJob, buf: &mut Vec<u8>) {
    for (i, kind) in state.kinds.iter().enumerate().skip(job.kinds_written) {
        codec::put_u8(buf, KIND);
        codec::put_u32(buf, i as u32);
        codec::put_str(buf, kind.as_str());
    }
    job.kinds_written = state.kinds.len();
    for (i, q) in state.queues.iter().enumerate().skip(job.queues_written) {
        codec::put_u8(buf, QUEUE);
        codec::put_u32(buf, i as u32);
        codec::put_str(buf, q.name.as_str());
        ops::put_settings(buf, &q.settings);
    }
    job.queues_written = state.queues.len();
}

fn encode_entry(id: u64, e: &Entry, x: Option<&Extra>, buf: &mut Vec<u8>) {
    codec::put_u8(buf, TASK);
    codec::put_u64(buf, id);
    codec::put_u32(buf, e.queue());
    codec::put_u32(buf, e.kind());
    codec::put_u16(buf, e.priority as u16);
    codec::put_u8(buf, e.state.index() as u8);
    codec::put_u8(buf, u8::from(e.has(flag::JSON)));
    codec::put_u32(buf, e.attempt);
    codec::put_u32(buf, e.max_attempts);
    ops::put_ts(buf, e.run_at);
    ops::put_ts(buf, e.created_at);
    let at = e.payload.at();
    codec::put_u64(buf, at.seq);
    codec::put_u64(buf, at.offset);
    let Some(x) = x else {
        codec::put_u8(buf, 0);
        return;
    };
    codec::put_u8(buf, 1);
    ops::put_ts(buf, x.updated_at);
    ops::put_opt_u64(buf, x.lease_ms);
    codec::put_str(buf, x.key.as_ref().map_or("", |k| k.as_str()));
    match &x.lease {
        Some(l) => {
            codec::put_u8(buf, 1);
            codec::put_str(buf, &l.owner);
            codec::put_u64(buf, l.token);
            ops::put_ts(buf, l.expires_at);
        }
        None => codec::put_u8(buf, 0),
    }
    codec::put_u32(buf, x.errors.len() as u32);
    for err in &x.errors {
        codec::put_u32(buf, err.attempt);
        ops::put_ts(buf, err.at);
        codec::put_str(buf, &err.message);
    }
}

/// Applies one snapshot chunk to `state` (recovery).
pub(crate) fn load_chunk(
    state: &mut State,
    chunk: &[u8],
    now: &mut Timestamp,
) -> Result<(), DecodeError> {
    let mut r = Reader::new(chunk);
    while !r.is_empty() {
        let at = r.position();
        match r.u8("item tag")? {
            HEADER => {
                let next_id = r.u64("next_id")?;
                state.next_id = state.next_id.max(next_id);
                *now = (*now).max(ops::ts(&mut r, "last_now")?);
            }
            KIND => {
                let index = r.u32("kind index")? as usize;
                let kind = read_name(&mut r, "kind", Kind::new)?;
                if state.intern_kind(&kind) as usize != index {
                    return Err(DecodeError {
                        what: "kind index",
                        at,
                    });
                }
            }
            QUEUE => {
                let index = r.u32("queue index")? as usize;
                let name = read_name(&mut r, "queue", QueueName::new)?;
                let settings = ops::read_settings(&mut r)?;
                let q = state.ensure_queue(&name, || settings.clone());
                if q as usize != index {
                    return Err(DecodeError {
                        what: "queue index",
                        at,
                    });
                }
                state.queue_mut(q).settings = settings;
            }
            TASK => load_entry(state, &mut r, *now, at)?,
            TASK_INLINE => {
                return Err(DecodeError {
                    what: "task with an inline payload (a checkpoint of an older Spool: \
                           drain the data directory with that version first)",
                    at,
                })
            }
            SCHEDULE => {
                let spec = ops::read_schedule_spec(&mut r)?;
                let last_fire_at =
                    ops::read_opt_u64(&mut r, "last_fire_at")?.map(|t| Timestamp(t as i64));
                let created_at = ops::ts(&mut r, "created_at")?;
                state.schedules.insert(
                    spec.name.clone(),
                    Schedule {
                        spec,
                        last_fire_at,
                        created_at,
                    },
                );
            }
            SEGMENT => {
                let seq = r.u64("segment")?;
                let written = r.u64("written")?;
                if let Some(used) = state.segments.get_mut(&seq) {
                    used.written = used.written.max(written);
                }
            }
            TOMBSTONE => {
                let q = r.u32("tombstone queue")?;
                let key = read_name(&mut r, "tombstone key", TaskKey::new)?;
                let id = r.u64("tombstone id")?;
                let until = ops::ts(&mut r, "tombstone until")?;
                if q as usize >= state.queues.len() {
                    return Err(DecodeError {
                        what: "tombstone queue",
                        at,
                    });
                }
                state.queue_mut(q).keys.tombstone(key, id, until);
            }
            _ => {
                return Err(DecodeError {
                    what: "item tag",
                    at,
                })
            }
        }
    }
    Ok(())
}

fn load_entry(
    state: &mut State,
    r: &mut Reader<'_>,
    now: Timestamp,
    at: usize,
) -> Result<(), DecodeError> {
    let id = r.u64("id")?;
    let queue = r.u32("queue")?;
    let kind = r.u32("kind")?;
    let priority = r.u16("priority")? as i16;
    let state_at = r.position();
    let task_state = *TaskState::ALL
        .get(r.u8("state")? as usize)
        .ok_or(DecodeError {
            what: "state",
            at: state_at,
        })?;
    let json = r.u8("payload format")? != 0;
    let attempt = r.u32("attempt")?;
    let max_attempts = r.u32("max_attempts")?;
    let run_at = ops::ts(r, "run_at")?;
    let created_at = ops::ts(r, "created_at")?;
    let seq = r.u64("payload segment")?;
    let offset = r.u64("payload offset")?;
    let extra_at = r.position();
    let extra = match r.u8("extra")? {
        0 => None,
        1 => Some(load_extra(r, at)?),
        _ => {
            return Err(DecodeError {
                what: "extra",
                at: extra_at,
            })
        }
    };
    let (queues, kinds) = (
        state.queues.len().min(MAX_QUEUES),
        state.kinds.len().min(MAX_KINDS),
    );
    if queue as usize >= queues || kind as usize >= kinds {
        return Err(DecodeError {
            what: "task tables",
            at,
        });
    }
    if state.tasks.contains(id) {
        state.remove(id, now);
    }
    let entry = Entry {
        run_at,
        created_at,
        payload: PayloadRef::new(LogPos { seq, offset }),
        attempt,
        max_attempts,
        queue: queue as u16,
        kind: kind as u16,
        priority,
        state: task_state,
        flags: if json { flag::JSON } else { 0 },
    };
    state.insert(id, entry, extra, now);
    Ok(())
}

fn load_extra(r: &mut Reader<'_>, at: usize) -> Result<Extra, DecodeError> {
    let updated_at = ops::ts(r, "updated_at")?;
    let lease_ms = ops::read_opt_u64(r, "lease_ms")?;
    let key = r.str("key")?;
    let key = if key.is_empty() {
        None
    } else {
        Some(TaskKey::new(key).map_err(|_| DecodeError { what: "key", at })?)
    };
    let lease_at = r.position();
    let lease = match r.u8("lease")? {
        0 => None,
        1 => Some(LeaseSlot {
            owner: Arc::from(r.str("owner")?),
            token: r.u64("token")?,
            expires_at: ops::ts(r, "expires_at")?,
        }),
        _ => {
            return Err(DecodeError {
                what: "lease",
                at: lease_at,
            })
        }
    };
    let n = r.count("errors", 16)?;
    let mut errors = Vec::with_capacity(n);
    for _ in 0..n {
        errors.push(ErrorRecord {
            attempt: r.u32("error attempt")?,
            at: ops::ts(r, "error at")?,
            message: r.str("error message")?.to_string(),
        });
    }
    Ok(Extra {
        updated_at,
        key,
        lease_ms,
        lease,
        errors,
    })
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
            kinds_written: 0,
            queues_written: 0,
            end_lsn: 0,
            waiting: reply.into_iter().collect(),
        };
        let mut buf = Vec::new();
        codec::put_u8(&mut buf, HEADER);
        codec::put_u64(&mut buf, self.state.next_id);
        ops::put_ts(&mut buf, self.last_now);
        encode_tables(&self.state, &mut job, &mut buf);
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
        encode_tables(&self.state, job, &mut buf);
        let mut left = SLICE;
        while left > 0 {
            let Some(from) = job.next else {
                break;
            };
            let (entries, next) = self.state.tasks.walk(from, left);
            left -= entries.len().min(left);
            for (id, e) in entries {
                encode_entry(id, e, self.state.tasks.extra(id), &mut buf);
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
            encode_tables(&self.state, job, &mut buf);
            for s in self.state.schedules.values() {
                codec::put_u8(&mut buf, SCHEDULE);
                ops::put_schedule_spec(&mut buf, &s.spec);
                ops::put_opt_u64(&mut buf, s.last_fire_at.map(|t| t.as_millis() as u64));
                ops::put_ts(&mut buf, s.created_at);
            }
            for (&seq, used) in &self.state.segments {
                codec::put_u8(&mut buf, SEGMENT);
                codec::put_u64(&mut buf, seq);
                codec::put_u64(&mut buf, used.written);
            }
            for (q, queue) in self.state.queues.iter().enumerate() {
                for (key, k) in queue.keys.tombstones() {
                    codec::put_u8(&mut buf, TOMBSTONE);
                    codec::put_u32(&mut buf, q as u32);
                    codec::put_str(&mut buf, key.as_str());
                    codec::put_u64(&mut buf, k.id);
                    ops::put_ts(&mut buf, k.expires_at);
                }
            }
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
