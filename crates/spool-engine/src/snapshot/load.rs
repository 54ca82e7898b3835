//! [`load_chunk`]: a checkpoint's chunks applied to the state recovery
//! rebuilds, refusing any item that does not decode.

use std::sync::Arc;

use spool_core::{
    ErrorRecord, Kind, QueueName, Schedule, TaskGroup, TaskKey, TaskState, Timestamp,
};
use spool_wal::LogPos;

use super::{
    EXTRA, EXTRA_TAILED, EXTRA_TRACED, EXTRA_UNNUMBERED, HEADER, KIND, NO_EXTRA, QUEUE, SCHEDULE,
    SEGMENT, TAIL_DEPS, TAIL_GROUP, TAIL_RESULTS, TAIL_TRACEPARENT, TASK, TASK_INLINE, TOMBSTONE,
};
use crate::codec::{DecodeError, Reader};
use crate::ops::{self, read_name};
use crate::state::{flag, Entry, Extra, LeaseSlot, PayloadRef, State, MAX_KINDS, MAX_QUEUES};

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
    let lease = ops::read_opt(r, "lease", |r| {
        Ok(LeaseSlot {
            owner: Arc::from(r.str("owner")?),
            token: r.u64("token")?,
            expires_at: ops::ts(r, "expires_at")?,
        })
    })?;
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
