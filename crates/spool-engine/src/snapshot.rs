//! The snapshot format: what a checkpoint writes and recovery loads.
//!
//! A snapshot is a sequence of chunks; a chunk is a sequence of tagged
//! items. Queues and kinds are referred to by index; both tables only grow,
//! so each chunk first defines the entries added since the previous chunk
//! ([`SnapshotEncoder`] remembers how far it got). Items are absolute, so
//! loading them in order rebuilds the state the copy saw, and the log
//! replayed from the snapshot's start lsn brings it up to date.

use std::sync::Arc;

use spool_core::{
    ErrorRecord, Kind, QueueName, Schedule, TaskGroup, TaskKey, TaskState, Timestamp,
};

use spool_wal::LogPos;

use crate::codec::{self, DecodeError, Reader};
use crate::ops::{self, read_name};
use crate::state::{flag, Entry, Extra, LeaseSlot, PayloadRef, State, MAX_KINDS, MAX_QUEUES};

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

/// What follows a task item's fixed fields: nothing; its extra fields as
/// Spool wrote them before it counted failures; its extra fields and the
/// count of its failures; those and then its traceparent (written only for
/// a task that has one, so other tasks read as before trace context);
/// those and then a byte of [`TAIL_TRACEPARENT`] and [`TAIL_GROUP`] bits
/// saying which of the two follow (written only for a task with a group,
/// so other tasks read as before groups), [`TAIL_DEPS`] for a task's
/// dependencies after them, and [`TAIL_RESULTS`] for its parents' results
/// after those.
const NO_EXTRA: u8 = 0;
const EXTRA_UNNUMBERED: u8 = 1;
const EXTRA: u8 = 2;
const EXTRA_TRACED: u8 = 3;
const EXTRA_TAILED: u8 = 4;
const TAIL_TRACEPARENT: u8 = 1;
const TAIL_GROUP: u8 = 2;
const TAIL_DEPS: u8 = 4;
const TAIL_RESULTS: u8 = 8;

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
                state.queue_mut(q).set_settings(settings);
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
    let (extra, group) = match r.u8("extra")? {
        NO_EXTRA => (None, None),
        tag @ (EXTRA_UNNUMBERED | EXTRA | EXTRA_TRACED | EXTRA_TAILED) => {
            let (extra, group) = load_extra(r, at, tag)?;
            (Some(extra).filter(|x| !x.is_bare(created_at)), group)
        }
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
    state.insert(id, entry, extra, group.as_ref(), now);
    Ok(())
}

/// A task's extra fields, as written under `tag`, and its group.
fn load_extra(
    r: &mut Reader<'_>,
    at: usize,
    tag: u8,
) -> Result<(Extra, Option<TaskGroup>), DecodeError> {
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
    // Before failures were numbered, the count was not kept: the errors
    // held are the least it can be, and numbers only need to grow from it.
    let failures = if tag == EXTRA_UNNUMBERED {
        errors.len() as u64
    } else {
        r.u64("failures")?
    };
    let tails = match tag {
        EXTRA_TRACED => TAIL_TRACEPARENT,
        EXTRA_TAILED => {
            let tails_at = r.position();
            let tails = r.u8("extra tails")?;
            let known = TAIL_TRACEPARENT | TAIL_GROUP | TAIL_DEPS | TAIL_RESULTS;
            // Results are kept only with dependencies.
            if tails & !known != 0 || tails & (TAIL_DEPS | TAIL_RESULTS) == TAIL_RESULTS {
                return Err(DecodeError {
                    what: "extra tails",
                    at: tails_at,
                });
            }
            tails
        }
        _ => 0,
    };
    let traceparent = match tails & TAIL_TRACEPARENT {
        0 => None,
        _ => Some(ops::read_traceparent(r)?.into_boxed_str()),
    };
    let group = match tails & TAIL_GROUP {
        0 => None,
        _ => Some(ops::read_name(r, "group", TaskGroup::new)?),
    };
    let deps = match tails & TAIL_DEPS {
        0 => None,
        _ => {
            let mut d = ops::read_deps(r)?;
            if tails & TAIL_RESULTS != 0 {
                d.results = ops::read_results(r)?
                    .into_iter()
                    .map(|(id, r)| (spool_core::TaskId(id), r))
                    .collect();
            }
            Some(Box::new(d))
        }
    };
    let extra = Extra {
        updated_at,
        key,
        lease_ms,
        lease,
        errors,
        failures,
        traceparent,
        deps,
    };
    Ok((extra, group))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use spool_core::Payload;

    use super::*;
    use crate::ops::{NewEntry, Op};

    const ID: u64 = 1;

    /// A snapshot of one task that has failed `failures` times and holds
    /// the last two of them, and where the task's item starts in it.
    fn snapshot(failures: u64) -> (Vec<u8>, usize) {
        traced_snapshot(failures, None, None)
    }

    /// [`snapshot`] of a task enqueued with `traceparent` and `group`.
    fn traced_snapshot(
        failures: u64,
        traceparent: Option<&str>,
        group: Option<&str>,
    ) -> (Vec<u8>, usize) {
        let mut state = enqueued(traceparent, group);
        let x = state.tasks.extra_mut(ID).unwrap();
        for attempt in [1, 2] {
            spool_core::transition::push_error(&mut x.errors, attempt, Timestamp(2), "boom");
        }
        x.failures = failures;
        let mut buf = Vec::new();
        let mut encoder = SnapshotEncoder::default();
        encoder.header(&state, Timestamp(2), &mut buf);
        let task = buf.len();
        encode_task(&state, &mut buf);
        (buf, task)
    }

    /// A state holding task `ID`, enqueued with `traceparent` and `group`.
    fn enqueued(traceparent: Option<&str>, group: Option<&str>) -> State {
        let mut state = State::new();
        let enqueue = Op::Enqueue {
            now: Timestamp(1),
            queue: QueueName::new("q").unwrap(),
            tasks: vec![NewEntry {
                id: ID,
                kind: Kind::new("k").unwrap(),
                payload: Payload::binary(vec![1]),
                priority: 0,
                run_at: Timestamp(1),
                key: None,
                max_attempts: 10,
                lease_ms: None,
                traceparent: traceparent.map(str::to_string),
                group: group.map(|g| TaskGroup::new(g).unwrap()),
                deps: None,
            }],
        };
        state.apply(&enqueue, &[PayloadRef::new(LogPos { seq: 1, offset: 64 })]);
        state
    }

    /// The snapshot item of task `ID` as a checkpoint writes it.
    fn encode_task(state: &State, buf: &mut Vec<u8>) {
        let (e, x) = (state.tasks.get(ID).unwrap(), state.tasks.extra(ID));
        SnapshotEncoder::entry(ID, e, x, state.group_of(ID), buf);
    }

    fn load_state(buf: &[u8]) -> State {
        let mut state = State::new();
        load_chunk(&mut state, buf, &mut Timestamp(0)).unwrap();
        state
    }

    fn load(buf: &[u8]) -> Extra {
        load_state(buf).tasks.extra(ID).unwrap().clone()
    }

    #[test]
    fn a_task_keeps_its_count_of_failures() {
        let x = load(&snapshot(9).0);
        assert_eq!((x.errors.len(), x.failures), (2, 9));
    }

    /// Where the extra tag of the task item at `task` is: after the item's
    /// tag, id, queue, kind, priority, state, format, attempt,
    /// max_attempts, run_at, created_at, payload segment and offset.
    fn extra_tag(task: usize) -> usize {
        task + 1 + 8 + 4 + 4 + 2 + 1 + 1 + 4 + 4 + 8 + 8 + 8 + 8
    }

    #[test]
    fn a_task_keeps_its_traceparent_and_one_without_is_written_as_before() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let (buf, task) = traced_snapshot(9, Some(tp), None);
        assert_eq!(buf[extra_tag(task)], EXTRA_TRACED);
        let x = load(&buf);
        assert_eq!((x.traceparent.as_deref(), x.failures), (Some(tp), 9));

        let (buf, task) = snapshot(9);
        assert_eq!(buf[extra_tag(task)], EXTRA);
        assert_eq!(load(&buf).traceparent, None);
    }

    #[test]
    fn a_task_keeps_its_group_with_or_without_a_traceparent() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        for traceparent in [None, Some(tp)] {
            let (buf, task) = traced_snapshot(9, traceparent, Some("tenant ü"));
            assert_eq!(buf[extra_tag(task)], EXTRA_TAILED);
            let state = load_state(&buf);
            let task = state.view(ID).unwrap().task;
            assert_eq!(task.traceparent.as_deref(), traceparent);
            assert_eq!(task.group.as_ref().map(TaskGroup::as_str), Some("tenant ü"));
            assert_eq!(task.errors.len(), 2);
        }
    }

    #[test]
    fn a_grouped_task_without_extra_fields_loads_without_them() {
        let state = enqueued(None, Some("tenant 7"));
        assert!(
            state.tasks.extra(ID).is_none(),
            "a group needs no extra fields"
        );
        let mut buf = Vec::new();
        SnapshotEncoder::default().header(&state, Timestamp(2), &mut buf);
        let task = buf.len();
        encode_task(&state, &mut buf);
        assert_eq!(
            buf[extra_tag(task)],
            EXTRA_TAILED,
            "as an older engine reads it"
        );
        let loaded = load_state(&buf);
        assert!(loaded.tasks.extra(ID).is_none());
        let view = loaded.view(ID).unwrap().task;
        assert_eq!(view.group.as_ref().map(TaskGroup::as_str), Some("tenant 7"));
        assert_eq!(view.updated_at, view.created_at);
    }

    #[test]
    fn a_task_from_before_failures_were_counted_still_loads() {
        // As Spool wrote the task before: extra tag 1, no count at the end.
        let (mut buf, task) = snapshot(9);
        let extra_tag = extra_tag(task);
        assert_eq!(buf[extra_tag], EXTRA);
        buf[extra_tag] = EXTRA_UNNUMBERED;
        buf.truncate(buf.len() - 8);
        let x = load(&buf);
        assert_eq!((x.errors.len(), x.failures), (2, 2));
    }
}
