//! [`SnapshotEncoder`]: the state a checkpoint copies, as chunks of items.

use spool_core::{TaskGroup, Timestamp};

use super::{
    EXTRA, EXTRA_TAILED, EXTRA_TRACED, HEADER, KIND, NO_EXTRA, QUEUE, SCHEDULE, SEGMENT, TAIL_DEPS,
    TAIL_GROUP, TAIL_RESULTS, TAIL_TRACEPARENT, TASK, TOMBSTONE,
};
use crate::codec;
use crate::ops;
use crate::state::{flag, Entry, Extra, State};

/// Writes items into chunks, defining each queue and kind once, before
/// the first item that refers to it.
#[derive(Debug, Default)]
pub(crate) struct SnapshotEncoder {
    kinds_written: usize,
    queues_written: usize,
}

impl SnapshotEncoder {
    /// The first item: the next task id and the clock, then the tables.
    pub(crate) fn header(&mut self, state: &State, now: Timestamp, buf: &mut Vec<u8>) {
        codec::put_u8(buf, HEADER);
        codec::put_u64(buf, state.next_id);
        ops::put_ts(buf, now);
        self.tables(state, buf);
    }

    /// The queues and kinds added since the last call.
    pub(crate) fn tables(&mut self, state: &State, buf: &mut Vec<u8>) {
        for (i, kind) in state.kinds.iter().enumerate().skip(self.kinds_written) {
            codec::put_u8(buf, KIND);
            codec::put_u32(buf, i as u32);
            codec::put_str(buf, kind.as_str());
        }
        self.kinds_written = state.kinds.len();
        for (i, q) in state.queues.iter().enumerate().skip(self.queues_written) {
            codec::put_u8(buf, QUEUE);
            codec::put_u32(buf, i as u32);
            codec::put_str(buf, q.name.as_str());
            ops::put_settings(buf, &q.settings);
        }
        self.queues_written = state.queues.len();
    }

    /// One task, of `group` if it has one; its queue and kind must have
    /// been written.
    ///
    /// The group is written among the extra fields (as before the engine
    /// kept it apart from them), so a grouped task without extra fields is
    /// written with empty ones, which loading drops again.
    pub(crate) fn entry(
        id: u64,
        e: &Entry,
        x: Option<&Extra>,
        group: Option<&TaskGroup>,
        buf: &mut Vec<u8>,
    ) {
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
        let bare;
        let x = match (x, group) {
            (Some(x), _) => x,
            (None, Some(_)) => {
                bare = Extra::new(e.created_at);
                &bare
            }
            (None, None) => {
                codec::put_u8(buf, NO_EXTRA);
                return;
            }
        };
        let tag = match (group.is_some() || x.deps.is_some(), &x.traceparent) {
            (true, _) => EXTRA_TAILED,
            (false, Some(_)) => EXTRA_TRACED,
            (false, None) => EXTRA,
        };
        codec::put_u8(buf, tag);
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
        codec::put_u64(buf, x.failures);
        if tag == EXTRA_TAILED {
            let trace = if x.traceparent.is_some() {
                TAIL_TRACEPARENT
            } else {
                0
            };
            let group = if group.is_some() { TAIL_GROUP } else { 0 };
            let deps = if x.deps.is_some() { TAIL_DEPS } else { 0 };
            let results = match &x.deps {
                Some(d) if !d.results.is_empty() => TAIL_RESULTS,
                _ => 0,
            };
            codec::put_u8(buf, trace | group | deps | results);
        }
        if let Some(tp) = &x.traceparent {
            codec::put_str(buf, tp);
        }
        if let Some(g) = group {
            codec::put_str(buf, g.as_str());
        }
        if let Some(d) = &x.deps {
            ops::put_deps(buf, d);
            if !d.results.is_empty() {
                ops::put_results(buf, d.results.iter().map(|(id, r)| (id.0, r)));
            }
        }
    }

    /// The last items, after every task: tables added meanwhile, the
    /// schedules, the payload counts of segments, the key tombstones.
    pub(crate) fn tail(&mut self, state: &State, buf: &mut Vec<u8>) {
        self.tables(state, buf);
        for s in state.schedules.values() {
            codec::put_u8(buf, SCHEDULE);
            ops::put_schedule_spec(buf, &s.spec);
            ops::put_opt_u64(buf, s.last_fire_at.map(|t| t.as_millis() as u64));
            ops::put_ts(buf, s.created_at);
        }
        for (&seq, used) in &state.segments {
            codec::put_u8(buf, SEGMENT);
            codec::put_u64(buf, seq);
            codec::put_u64(buf, used.written);
        }
        for (q, queue) in state.queues.iter().enumerate() {
            for (key, k) in queue.keys.tombstones() {
                codec::put_u8(buf, TOMBSTONE);
                codec::put_u32(buf, q as u32);
                codec::put_str(buf, key.as_str());
                codec::put_u64(buf, k.id);
                ops::put_ts(buf, k.expires_at);
            }
        }
    }
}
