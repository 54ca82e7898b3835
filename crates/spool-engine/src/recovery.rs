//! Rebuilding state at open: newest checkpoint, then the log after it.

use std::time::{Duration, Instant};

use spool_core::Timestamp;
use spool_wal::{LogPos, ReplayExtent, Wal, RECORD_BATCH};

use crate::error::EngineError;
use crate::ops::Op;
use crate::snapshot::load_chunk;
use crate::state::{PayloadRef, State};

/// What recovery rebuilt.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub state: State,
    /// The latest time the engine had used: its clock never goes below it.
    pub last_now: Timestamp,
    pub next_lsn: u64,
}

pub(crate) fn recover(wal: &mut Wal) -> Result<Recovered, EngineError> {
    let mut state = State::new();
    let mut last_now = Timestamp::MIN;
    let mut from = 1;
    let mut progress = Progress::new();
    if let Some(snap) = wal.latest_snapshot()? {
        from = snap.start_lsn();
        for chunk in snap.chunks() {
            load_chunk(&mut state, &chunk?, &mut last_now).map_err(|e| EngineError::Decode {
                what: "checkpoint",
                reason: e.to_string(),
            })?;
            progress.loaded(state.tasks.len());
        }
        tracing::info!(
            tasks = state.tasks.len(),
            from_lsn = from,
            "checkpoint loaded; replaying the log after it"
        );
    }
    progress.extent = wal.replay_extent(from);
    let (mut spans, mut payloads) = (Vec::new(), Vec::new());
    let summary = wal.replay(from, |rec| {
        if rec.kind == RECORD_BATCH {
            let clock = rec
                .body
                .get(..8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(i64::from_le_bytes)
                .ok_or_else(|| format!("batch marker at lsn {} has no clock", rec.lsn))?;
            last_now = last_now.max(Timestamp(clock));
            return Ok(());
        }
        spans.clear();
        let op = Op::decode(rec.kind, rec.body, &mut spans)
            .map_err(|e| format!("lsn {}: {e}", rec.lsn))?;
        payloads.clear();
        payloads.extend(
            spans
                .iter()
                .map(|s| PayloadRef::new(rec.body_at.advance(u64::from(s.offset)))),
        );
        state.apply(&op, &payloads);
        progress.replayed(rec.body_at, state.tasks.len());
        Ok(())
    })?;
    Ok(Recovered {
        state,
        last_now,
        next_lsn: (summary.last_lsn + 1).max(from),
    })
}

/// Logs how far recovery got every few seconds, so an operator watching a
/// restart of a big store sees it move rather than wonder if it hung.
struct Progress {
    last: Instant,
    /// The log the replay reads, to say how much of it is done.
    extent: Option<ReplayExtent>,
}

const PROGRESS_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    fn new() -> Self {
        Progress {
            last: Instant::now(),
            extent: None,
        }
    }

    fn due(&mut self) -> bool {
        if self.last.elapsed() < PROGRESS_EVERY {
            return false;
        }
        self.last = Instant::now();
        true
    }

    fn loaded(&mut self, tasks: usize) {
        if self.due() {
            tracing::info!(tasks, "recovery: loading the checkpoint");
        }
    }

    fn replayed(&mut self, at: LogPos, tasks: usize) {
        if self.due() {
            tracing::info!(
                tasks,
                percent = self.extent.map_or(0, |e| e.percent(at)),
                "recovery: replaying the log"
            );
        }
    }
}
