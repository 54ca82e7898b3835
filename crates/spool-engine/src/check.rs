//! Offline verification of a data directory (`spool check`).
//!
//! First the log's structure (every segment and checkpoint: headers, chain,
//! CRCs, LSNs); then, if nothing is corrupt, a read-only recovery that
//! rebuilds state in memory, counts tasks per queue and state, and reads
//! back every live task's payload where its locator points. Nothing is
//! written and no lock is taken, so it can run beside a live engine (it then
//! sees what was durable when it read).

use std::path::Path;
use std::sync::Arc;

use hashbrown::HashMap;
use spool_core::{Clock, QueueStats, SystemClock};
use spool_wal::{Fs, RecoveryMode, SegmentReader, StdFs, Wal, WalConfig, DEFAULT_SEGMENT_SIZE};

use crate::error::EngineError;
use crate::recovery::recover;
use crate::state::{State, WalkFrom};

/// What [`check`] found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Per-file structure and verdicts.
    pub log: spool_wal::CheckReport,
    /// Counts per queue and state as recovery would rebuild them; empty when
    /// the log is corrupt (recovery would refuse).
    pub queues: Vec<QueueStats>,
    /// Live tasks in all queues.
    pub tasks: u64,
    /// Bytes of live tasks' payloads, which the log keeps.
    pub live_payload_bytes: u64,
    /// Bytes of the log's segment files (live payloads, records recovery
    /// still replays, and dead space not yet reclaimed).
    pub log_bytes: u64,
    /// Live tasks whose payload could not be read back where the task
    /// points (first few), with why.
    pub payload_errors: Vec<String>,
    /// How many such tasks there were in all.
    pub bad_payloads: u64,
}

impl CheckReport {
    /// Acknowledged data is damaged: the engine would refuse to start.
    pub fn has_corruption(&self) -> bool {
        self.log.has_corruption() || self.bad_payloads > 0
    }
}

/// Verifies the data directory at `dir` without changing it.
pub fn check(dir: &Path) -> Result<CheckReport, EngineError> {
    let fs: Arc<dyn Fs> = Arc::new(StdFs);
    let log = spool_wal::check(fs.clone(), dir)?;
    if log.has_corruption() {
        let log_bytes = log.segments.iter().map(|s| s.bytes).sum();
        return Ok(CheckReport {
            log,
            queues: Vec::new(),
            tasks: 0,
            live_payload_bytes: 0,
            log_bytes,
            payload_errors: Vec::new(),
            bad_payloads: 0,
        });
    }
    let mut wal = Wal::open_read_only(
        fs,
        WalConfig {
            dir: dir.to_path_buf(),
            segment_size: DEFAULT_SEGMENT_SIZE,
            recovery: RecoveryMode::Strict,
        },
    )?;
    let mut recovered = recover(&mut wal)?;
    let now = SystemClock.now().max(recovered.last_now);
    recovered.state.activate_due(now);
    let payloads = check_payloads(&recovered.state, &wal.segment_reader(), &log);
    Ok(CheckReport {
        queues: recovered.state.stats(now),
        tasks: recovered.state.tasks.len() as u64,
        live_payload_bytes: payloads.live_bytes,
        log_bytes: log.segments.iter().map(|s| s.bytes).sum(),
        payload_errors: payloads.errors,
        bad_payloads: payloads.bad,
        log,
    })
}

/// Payload errors listed in full; the rest are only counted.
const MAX_LISTED: usize = 20;

#[derive(Default)]
struct PayloadCheck {
    live_bytes: u64,
    errors: Vec<String>,
    bad: u64,
}

/// Reads every live task's payload where it points. The log check already
/// verified every record's CRC, so a range that lies inside a segment's
/// valid records and reads back whole is a payload whose CRC holds.
fn check_payloads(
    state: &State,
    reader: &SegmentReader,
    log: &spool_wal::CheckReport,
) -> PayloadCheck {
    let valid_end: HashMap<String, u64> = log
        .segments
        .iter()
        .map(|s| (file_name(&s.file), s.bytes))
        .collect();
    let mut out = PayloadCheck::default();
    let mut from = Some(WalkFrom::Pages(0));
    while let Some(at) = from {
        let (entries, next) = state.tasks.walk(at, 4096);
        for (id, e) in entries {
            let pos = e.payload.at();
            let file = format!("{:020}.wal", pos.seq);
            let problem = match reader.read_prefixed(pos) {
                Err(e) => Some(e.to_string()),
                Ok(bytes) => {
                    out.live_bytes += bytes.len() as u64;
                    let end = pos.offset + 4 + bytes.len() as u64;
                    let within = valid_end.get(&file).is_some_and(|&valid| end <= valid);
                    (!within).then(|| {
                        format!("segment {file} does not hold bytes {}..{end}", pos.offset)
                    })
                }
            };
            if let Some(why) = problem {
                out.bad += 1;
                if out.errors.len() < MAX_LISTED {
                    out.errors.push(format!("task {id}: {why}"));
                }
            }
        }
        from = next;
    }
    out
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
