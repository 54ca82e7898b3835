//! Rebuilding state at open: newest checkpoint, then the log after it.

use spool_core::Timestamp;
use spool_wal::{Wal, RECORD_BATCH};

use crate::checkpoint::load_chunk;
use crate::error::EngineError;
use crate::ops::Op;
use crate::state::State;

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
    if let Some(snap) = wal.latest_snapshot()? {
        from = snap.start_lsn();
        for chunk in snap.chunks() {
            load_chunk(&mut state, &chunk?, &mut last_now).map_err(|e| EngineError::Decode {
                what: "checkpoint",
                reason: e.to_string(),
            })?;
        }
    }
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
        let op = Op::decode(rec.kind, rec.body).map_err(|e| format!("lsn {}: {e}", rec.lsn))?;
        state.apply(&op);
        Ok(())
    })?;
    Ok(Recovered {
        state,
        last_now,
        next_lsn: (summary.last_lsn + 1).max(from),
    })
}
