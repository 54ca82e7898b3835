//! The core thread: sole owner of state, and the group-commit loop.
//!
//! Callers send jobs (closures over the core) on a bounded channel. The core
//! runs each job against memory, encodes what changed into the open batch
//! and parks the reply. While the WAL thread syncs one batch, the next one
//! fills; when the sync returns, the next batch goes out, so the batch size
//! follows the load by itself. Only one batch is ever in flight: recovery
//! relies on that to tell a torn tail from corruption.
//!
//! Every reply — reads and errors too — waits until everything it may have
//! seen is durable, so no client observes state a crash could undo.

mod checkpoint;
mod commands;
mod compact;
mod refills;
mod room;
mod waiters;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use spool_core::{Clock, StoreError, Timestamp};
use spool_wal::{BatchBuffer, LogPos, WalWriter};
use tokio::sync::oneshot;

use crate::backoff::Backoff;
use crate::ops::{Op, Span};
use crate::state::{PayloadRef, State};
use checkpoint::CheckpointJob;
use refills::Refills;
use waiters::Waiters;

/// Work sent to the core thread.
pub(crate) type Job = Box<dyn FnOnce(&mut Core) + Send>;

/// A reply waiting for the batch that makes what it saw durable.
type Parked = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// Stop reading new jobs while a sync is in flight and this much is buffered:
/// the bounded channel then pushes back on callers.
const MAX_OPEN_BATCH_BYTES: usize = 16 * 1024 * 1024;
/// The open batch stops taking jobs past this size, whatever else happens,
/// so a segment (and a payload offset in it) stays far below 4 GiB.
const MAX_BATCH_BYTES: usize = 256 * 1024 * 1024;
/// Jobs run back to back before the core looks at timers and the log again.
const DRAIN_LIMIT: usize = 512;
/// The core re-reads the clock at least this often, so timers fire promptly
/// even with a clock that tests move by hand.
const MAX_IDLE: Duration = Duration::from_millis(50);
/// Most lease expiries handled in one pass, keeping each pass short.
const EXPIRY_SLICE: usize = 4096;
/// Most payload bytes kept in hand for parked claims in one loop turn.
const FRESH_MAX_BYTES: usize = 1024 * 1024;

/// Messages from other threads back to the core.
pub(crate) enum Notice {
    /// The in-flight batch finished (Ok: durable).
    BatchDone(Result<(), String>),
    /// A checkpoint file is complete on disk and can be published.
    CheckpointWritten(Result<spool_wal::PendingSnapshot, String>),
    /// A published checkpoint finished (or failed).
    CheckpointPublished(Result<(), String>),
    /// Compaction read a slice of payloads.
    MovesRead(compact::SliceRead),
}

/// Knobs the core needs from the engine's configuration.
#[derive(Debug, Clone)]
pub(crate) struct CoreSettings {
    pub strict_queues: bool,
    pub checkpoint_bytes: u64,
    /// The shortest and longest wait after a failed checkpoint.
    pub checkpoint_backoff: (Duration, Duration),
    pub dir: std::path::PathBuf,
    pub fs: Arc<dyn spool_wal::Fs>,
}

pub(crate) struct Core {
    pub(crate) state: State,
    clock: Arc<dyn Clock>,
    pub(crate) last_now: Timestamp,
    pub(crate) settings: CoreSettings,
    pub(crate) wal: WalWriter,
    pub(crate) next_lsn: u64,
    /// Where the log ends once every submitted batch is written, and the
    /// nominal segment size: the open batch's placement follows from them.
    pub(crate) log_end: LogPos,
    segment_size: u64,
    /// Where the open batch will be written.
    open_at: LogPos,
    /// Scratch for the payload spans of the op being committed.
    spans: Vec<Span>,
    /// Reads payloads for compaction, off the core thread.
    compactor: compact::Reader,
    /// Tasks whose payloads compaction will move, with where they are now.
    pending_moves: VecDeque<(u64, PayloadRef)>,
    /// Payloads enqueued this loop turn into queues with parked claims, by
    /// task id (ascending: ids only grow): the waiter that gets such a task
    /// gets its bytes from here instead of reading back what the log has
    /// not even written yet. Emptied every turn, and bounded by
    /// [`FRESH_MAX_BYTES`].
    fresh: Vec<(u64, Bytes)>,
    fresh_bytes: usize,
    /// Segments moved out of by records in the open batch: not to be
    /// reclaimed until that batch is on its way to disk.
    pub(crate) open_moved_from: Vec<u64>,
    /// Highest lsn handed to the WAL thread.
    pub(crate) submitted_lsn: u64,
    open: Option<BatchBuffer>,
    open_replies: Vec<Parked>,
    /// Replies that only need the in-flight batch to become durable.
    after_flight: Vec<Parked>,
    in_flight: bool,
    poisoned: Option<String>,
    poison_flag: Arc<AtomicBool>,
    /// When the core may next ask the WAL thread to reserve space again.
    reserve_retry_at: Instant,
    waiters: Waiters,
    /// Rate-limited queues to serve again when their buckets refill.
    refills: Refills,
    pub(crate) checkpoint: Option<CheckpointJob>,
    pub(crate) checkpoint_backoff: Backoff,
    pub(crate) notices_tx: flume::Sender<Notice>,
    notices: flume::Receiver<Notice>,
    /// Notices that arrived while the core waited for a batch in flight
    /// ([`Core::finish_flight`]), handled at the next loop turn.
    deferred: Vec<Notice>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("next_lsn", &self.next_lsn)
            .field("tasks", &self.state.tasks.len())
            .finish_non_exhaustive()
    }
}

enum Event {
    Job(Job),
    Notice(Notice),
    Closed,
    Idle,
}

impl Core {
    pub(crate) fn new(
        state: State,
        clock: Arc<dyn Clock>,
        last_now: Timestamp,
        settings: CoreSettings,
        wal: WalWriter,
        next_lsn: u64,
        poison_flag: Arc<AtomicBool>,
    ) -> Self {
        let (notices_tx, notices) = flume::unbounded();
        let (log_end, segment_size) = wal.start_position();
        let compactor = compact::Reader::start(wal.reader(), notices_tx.clone());
        let (backoff_min, backoff_max) = settings.checkpoint_backoff;
        Core {
            state,
            clock,
            last_now,
            settings,
            wal,
            next_lsn,
            log_end,
            segment_size,
            open_at: log_end,
            spans: Vec::new(),
            compactor,
            pending_moves: VecDeque::new(),
            fresh: Vec::new(),
            fresh_bytes: 0,
            open_moved_from: Vec::new(),
            submitted_lsn: next_lsn.saturating_sub(1),
            open: None,
            open_replies: Vec::new(),
            after_flight: Vec::new(),
            in_flight: false,
            poisoned: None,
            poison_flag,
            reserve_retry_at: Instant::now(),
            waiters: Waiters::default(),
            refills: Refills::default(),
            checkpoint: None,
            checkpoint_backoff: Backoff::new(backoff_min, backoff_max),
            notices_tx,
            notices,
            deferred: Vec::new(),
        }
    }

    /// The engine clock: the wall clock, but never earlier than any time the
    /// engine already used (so it does not run backwards across restarts).
    pub(crate) fn now(&mut self) -> Timestamp {
        let t = self.clock.now().max(self.last_now);
        self.last_now = t;
        t
    }

    /// Runs until every `Engine` handle is gone, then flushes and stops the log.
    pub(crate) fn run(mut self, jobs: flume::Receiver<Job>) {
        loop {
            for notice in std::mem::take(&mut self.deferred) {
                self.on_notice(notice);
            }
            self.tick();
            self.submit_open();
            self.checkpoint_step();
            self.compact_step();
            match self.wait(&jobs) {
                Event::Job(job) => {
                    self.run_job(job);
                    for job in jobs.try_iter().take(DRAIN_LIMIT) {
                        self.run_job(job);
                        if self.open_bytes() > MAX_BATCH_BYTES || self.must_wait_for_flight() {
                            break;
                        }
                    }
                }
                Event::Notice(n) => self.on_notice(n),
                Event::Idle => {}
                Event::Closed => break,
            }
        }
        self.shut_down();
    }

    fn open_bytes(&self) -> usize {
        self.open.as_ref().map_or(0, BatchBuffer::byte_len)
    }

    fn wait(&self, jobs: &flume::Receiver<Job>) -> Event {
        let timeout = self.next_wakeup();
        let backpressure = (self.in_flight && self.open_bytes() > MAX_OPEN_BATCH_BYTES)
            || self.must_wait_for_flight();
        let select = flume::Selector::new().recv(&self.notices, |n| match n {
            Ok(n) => Event::Notice(n),
            Err(_) => Event::Idle,
        });
        let select = if backpressure {
            select
        } else {
            select.recv(jobs, |j| match j {
                Ok(j) => Event::Job(j),
                Err(_) => Event::Closed,
            })
        };
        select.wait_timeout(timeout).unwrap_or(Event::Idle)
    }

    /// How long the core may sleep before a timer or a waiter falls due.
    fn next_wakeup(&self) -> Duration {
        let mut d = MAX_IDLE;
        if let Some(at) = self.state.next_timer() {
            d = d.min(at.since(self.clock.now()));
        }
        if let Some(at) = self.refills.next() {
            d = d.min(at.since(self.clock.now()));
        }
        if let Some(at) = self.waiters.next_deadline() {
            d = d.min(at.saturating_duration_since(Instant::now()));
        }
        if self.checkpoint_busy() || self.compaction_busy() {
            d = Duration::ZERO;
        }
        d
    }

    /// Time may have moved since the last job (a caller can see a reply,
    /// move on and send its next job while the core is still draining):
    /// states derived from the clock must be current before a job looks.
    fn run_job(&mut self, job: Job) {
        self.catch_up();
        job(self);
    }

    /// Scheduled tasks that fell due become ready; expired leases end.
    fn catch_up(&mut self) {
        if self.refuse_if_poisoned().is_err() {
            return;
        }
        let now = self.now();
        self.state.activate_due(now);
        self.expire_leases(now);
    }

    /// Time-driven work between jobs: the above, key windows, waiters.
    fn tick(&mut self) {
        if self.refuse_if_poisoned().is_err() {
            return;
        }
        self.catch_up();
        self.retry_reserve();
        let now = self.last_now;
        for queue in &mut self.state.queues {
            queue.keys.sweep(now);
        }
        for q in self.refills.take_due(now) {
            self.state.wake(q);
        }
        self.serve_waiters();
        self.fresh.clear();
        self.fresh_bytes = 0;
        self.expire_waiters();
    }

    /// Encodes `op` into the open batch and applies it to memory, with the
    /// log positions its payloads will have once the batch is written.
    pub(crate) fn commit(&mut self, op: Op) {
        self.commit_ref(&op);
    }

    /// [`Core::commit`], leaving the op to the caller.
    pub(crate) fn commit_ref(&mut self, op: &Op) {
        let now = self.last_now;
        if self.open.is_none() {
            let at = self.log_end.place(self.segment_size);
            let mut batch = match self.wal.recycled_buffer() {
                Some(buf) => BatchBuffer::with_buffer(buf, self.next_lsn, now.as_millis()),
                None => BatchBuffer::new(self.next_lsn, now.as_millis()),
            };
            batch.set_placement(at);
            self.open_at = at;
            self.open = Some(batch);
        }
        let Some(batch) = self.open.as_mut() else {
            return;
        };
        let mut spans = std::mem::take(&mut self.spans);
        spans.clear();
        let mut body_at = 0;
        batch.append(op.kind(), |buf| {
            body_at = buf.len();
            op.encode(buf, &mut spans);
        });
        self.next_lsn = batch.last_lsn() + 1;
        let body = self.open_at.advance(body_at as u64);
        let payloads: Vec<PayloadRef> = spans
            .iter()
            .map(|s| PayloadRef::new(body.advance(u64::from(s.offset))))
            .collect();
        self.state.apply(op, &payloads);
        self.spans = spans;
    }

    /// Sends `result` once everything this job may have observed is durable.
    pub(crate) fn respond<T: Send + 'static>(
        &mut self,
        result: Result<T, StoreError>,
        tx: oneshot::Sender<Result<T, StoreError>>,
    ) {
        if self.open.is_some() {
            self.open_replies.push(Box::new(move |d| {
                let _ = tx.send(d.and(result));
            }));
        } else if self.in_flight {
            self.after_flight.push(Box::new(move |d| {
                let _ = tx.send(d.and(result));
            }));
        } else {
            let _ = tx.send(result);
        }
    }

    /// The error every request gets once the log has failed.
    pub(crate) fn refuse_if_poisoned(&self) -> Result<(), StoreError> {
        if !self.poison_flag.load(Ordering::Relaxed) {
            return Ok(());
        }
        let why = self.poisoned.as_deref().unwrap_or("a log write failed");
        Err(StoreError::Unavailable(format!(
            "the engine stopped after a log failure: {why}"
        )))
    }

    /// Hands the open batch to the WAL thread if none is in flight.
    fn submit_open(&mut self) {
        if self.in_flight {
            return;
        }
        let Some(batch) = self.open.take() else {
            return;
        };
        self.submitted_lsn = batch.last_lsn();
        self.log_end = self.open_at.advance(batch.byte_len() as u64);
        self.open_moved_from.clear();
        let replies = std::mem::take(&mut self.open_replies);
        let notices = self.notices_tx.clone();
        let poison_flag = self.poison_flag.clone();
        metrics::histogram!("spool_wal_batch_records").record(batch.record_count() as f64);
        metrics::histogram!("spool_wal_batch_bytes").record(batch.byte_len() as f64);
        let submitted = Instant::now();
        self.in_flight = true;
        self.wal.submit(
            batch,
            Box::new(move |result| {
                metrics::histogram!("spool_wal_write_sync_seconds")
                    .record(submitted.elapsed().as_secs_f64());
                let outcome = result.map_err(|e| e.to_string());
                // Raised before any reply goes out, so a caller that saw the
                // failure also sees the engine stopped.
                if outcome.is_err() {
                    poison_flag.store(true, Ordering::SeqCst);
                }
                let reply = outcome
                    .clone()
                    .map_err(|why| StoreError::Unavailable(format!("log write failed: {why}")));
                for r in replies {
                    r(reply.clone());
                }
                let _ = notices.send(Notice::BatchDone(outcome));
            }),
        );
    }

    fn on_notice(&mut self, notice: Notice) {
        match notice {
            Notice::BatchDone(result) => {
                self.in_flight = false;
                let reply = match &result {
                    Ok(()) => Ok(()),
                    Err(why) => {
                        self.poison(why.clone());
                        Err(StoreError::Unavailable(format!("log write failed: {why}")))
                    }
                };
                for r in std::mem::take(&mut self.after_flight) {
                    r(reply.clone());
                }
                self.maybe_start_checkpoint();
            }
            Notice::CheckpointWritten(result) => self.checkpoint_written(result),
            Notice::CheckpointPublished(result) => self.checkpoint_published(result),
            Notice::MovesRead(read) => self.moves_read(read),
        }
    }

    /// Waits until the batch in flight is done, in the middle of a job:
    /// other notices wait in `deferred`, so no job runs inside another.
    pub(crate) fn finish_flight(&mut self) {
        while self.in_flight {
            match self.notices.recv() {
                Ok(done @ Notice::BatchDone(_)) => self.on_notice(done),
                Ok(other) => self.deferred.push(other),
                Err(_) => return,
            }
        }
    }

    /// A failed write or sync is fatal for the log: it is never retried and
    /// assumed fine. Everything after answers `unavailable`.
    fn poison(&mut self, why: String) {
        if self.poisoned.is_none() {
            tracing::error!(error = %why, "write-ahead log failed; the engine stops accepting requests");
            self.poison_flag.store(true, Ordering::SeqCst);
            self.poisoned = Some(why);
            self.waiters
                .fail_all("the engine stopped after a log failure");
        }
    }

    fn shut_down(mut self) {
        self.waiters.fail_all("the engine is shutting down");
        self.compactor.stop();
        for notice in std::mem::take(&mut self.deferred) {
            self.on_notice(notice);
        }
        loop {
            self.submit_open();
            if !self.in_flight {
                break;
            }
            match self.notices.recv() {
                Ok(n) => self.on_notice(n),
                Err(_) => break,
            }
        }
        if let Err(e) = self.wal.shutdown() {
            tracing::error!(error = %e, "closing the write-ahead log failed");
        }
    }
}
