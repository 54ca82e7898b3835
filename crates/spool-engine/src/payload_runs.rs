//! Reading many payloads back from the log with few reads.
//!
//! Payloads written together lie side by side in a segment, so each run of
//! neighbours (same segment, starting within [`RUN_SPAN`] of the run's
//! first) is one positioned read, and every payload of the run a slice of
//! it. A claim of a hundred tasks enqueued together is one read instead of
//! two hundred; compaction, which copies every tenth payload of a segment
//! or so, reads the segment in large sequential pieces instead of hopping
//! through it, which spares the disk the group commit waits on.

use bytes::Bytes;
use spool_wal::{LogPos, SegmentReader};

/// Payloads read together when they start within this distance of the
/// run's first; and how far past the last start the read goes, so that
/// payloads up to this size need no second read.
const RUN_SPAN: u64 = 1024 * 1024;
const RUN_TAIL: usize = 4 * 1024;

/// What reading one payload gave: its bytes, or why it could not be read.
pub(crate) type PayloadRead = Result<Bytes, String>;

/// The payloads at `positions` (each a length-prefixed field), in the same
/// order. Runs are read in log order until `budget` bytes have been read;
/// the payloads past that are `None` (not read).
pub(crate) fn read_payloads(
    reader: &SegmentReader,
    positions: &[LogPos],
    budget: usize,
) -> Vec<Option<PayloadRead>> {
    let mut order: Vec<usize> = (0..positions.len()).collect();
    order.sort_by_key(|&i| positions[i]);
    let mut out: Vec<Option<PayloadRead>> = std::iter::repeat_with(|| None)
        .take(positions.len())
        .collect();
    let mut spent = 0;
    let mut run_start = 0;
    while run_start < order.len() && spent < budget {
        let first = positions[order[run_start]];
        let mut end = run_start + 1;
        while end < order.len() {
            let at = positions[order[end]];
            if at.seq != first.seq || at.offset - first.offset > RUN_SPAN {
                break;
            }
            end += 1;
        }
        let run = &order[run_start..end];
        run_start = end;
        if run.len() == 1 {
            // A lone payload: two small reads beat a window's copy.
            let read = read_alone(reader, first);
            spent += read.as_ref().map_or(0, Bytes::len);
            out[run[0]] = Some(read);
            continue;
        }
        let last = positions[run[run.len() - 1]];
        let window_len = (last.offset - first.offset) as usize + RUN_TAIL;
        let window = match reader.read_window(first, window_len) {
            Ok(w) => Bytes::from(w),
            Err(e) => {
                let why = e.to_string();
                for &i in run {
                    out[i] = Some(Err(why.clone()));
                }
                continue;
            }
        };
        spent += window.len();
        for &i in run {
            let at = positions[i];
            let rel = (at.offset - first.offset) as usize;
            let in_window = window
                .get(rel..rel + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(|b| u32::from_le_bytes(b) as usize)
                .filter(|&len| rel + 4 + len <= window.len());
            out[i] = Some(match in_window {
                Some(len) => Ok(window.slice(rel + 4..rel + 4 + len)),
                // Longer than the window: read it alone.
                None => read_alone(reader, at),
            });
        }
    }
    out
}

fn read_alone(reader: &SegmentReader, at: LogPos) -> PayloadRead {
    reader
        .read_prefixed(at)
        .map(Bytes::from)
        .map_err(|e| e.to_string())
}
