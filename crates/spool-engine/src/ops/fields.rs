//! How the fields of log records are laid out: timestamps, payloads (and
//! where their bytes lie), new tasks, dependencies, follow-ups, results and
//! names. Checkpoints use the same layouts for the same fields.
//!
//! Readers never trust a length or a tag: anything that does not decode is
//! a [`DecodeError`] naming the field.

use spool_core::deps::Outcome;
use spool_core::{
    Dependencies, Kind, ParentFailure, Payload, PayloadFormat, TaskGroup, TaskId, TaskKey,
    TaskResult, Timestamp, TraceParent,
};

use crate::codec::{self, DecodeError, Reader};

use super::{Follow, NewDeps, NewEntry, Span};

pub(crate) fn put_ts(buf: &mut Vec<u8>, t: Timestamp) {
    codec::put_i64(buf, t.as_millis());
}

pub(crate) fn put_payload(buf: &mut Vec<u8>, p: &Payload) {
    codec::put_u8(
        buf,
        match p.format {
            PayloadFormat::Binary => 0,
            PayloadFormat::Json => 1,
        },
    );
    codec::put_bytes(buf, &p.bytes);
}

pub(crate) fn put_opt_u64(buf: &mut Vec<u8>, v: Option<u64>) {
    match v {
        Some(v) => {
            codec::put_u8(buf, 1);
            codec::put_u64(buf, v);
        }
        None => codec::put_u8(buf, 0),
    }
}

/// Encodes a task payload and notes where its bytes went (relative to
/// `base`, the body's start).
pub(super) fn put_task_payload(buf: &mut Vec<u8>, p: &Payload, base: usize, spans: &mut Vec<Span>) {
    put_payload(buf, p);
    spans.push(Span {
        offset: (buf.len() - p.bytes.len() - 4 - base) as u32,
    });
}

/// Decodes a task payload's format and notes where its bytes are, without
/// copying them: the engine reads them from the log when asked.
pub(super) fn read_task_payload(
    r: &mut Reader<'_>,
    spans: &mut Vec<Span>,
) -> Result<Payload, DecodeError> {
    let format = read_payload_format(r)?;
    spans.push(Span {
        offset: r.position() as u32,
    });
    r.bytes("payload")?;
    Ok(Payload {
        format,
        bytes: Default::default(),
    })
}

/// The byte after a new task's max_attempts says what follows it: its own
/// lease (u64) when [`ENTRY_LEASE`] is set, then its traceparent (a
/// string) when [`ENTRY_TRACEPARENT`] is, then its group (a string) when
/// [`ENTRY_GROUP`] is. Spool wrote only 0 and 1 before tasks carried trace
/// context, and no group bit before groups, so those records read as they
/// always did.
const ENTRY_LEASE: u8 = 1;
const ENTRY_TRACEPARENT: u8 = 2;
const ENTRY_GROUP: u8 = 4;
/// Then its dependencies ([`put_new_deps`]), when this bit is set.
const ENTRY_DEPS: u8 = 8;

/// The fewest bytes an encoded [`NewEntry`] takes.
pub(super) const NEW_ENTRY_MIN_LEN: usize = 8 + 4 + 5 + 2 + 8 + 4 + 4 + 1;

pub(super) fn put_new_entry(buf: &mut Vec<u8>, t: &NewEntry, base: usize, spans: &mut Vec<Span>) {
    codec::put_u64(buf, t.id);
    codec::put_str(buf, t.kind.as_str());
    put_task_payload(buf, &t.payload, base, spans);
    codec::put_u16(buf, t.priority as u16);
    put_ts(buf, t.run_at);
    codec::put_str(buf, t.key.as_ref().map_or("", |k| k.as_str()));
    codec::put_u32(buf, t.max_attempts);
    let lease = if t.lease_ms.is_some() { ENTRY_LEASE } else { 0 };
    let trace = if t.traceparent.is_some() {
        ENTRY_TRACEPARENT
    } else {
        0
    };
    let group = if t.group.is_some() { ENTRY_GROUP } else { 0 };
    let deps = if t.deps.is_some() { ENTRY_DEPS } else { 0 };
    codec::put_u8(buf, lease | trace | group | deps);
    if let Some(ms) = t.lease_ms {
        codec::put_u64(buf, ms);
    }
    if let Some(tp) = &t.traceparent {
        codec::put_str(buf, tp);
    }
    if let Some(g) = &t.group {
        codec::put_str(buf, g.as_str());
    }
    if let Some(d) = &t.deps {
        put_new_deps(buf, d);
    }
}

pub(super) fn put_ids(buf: &mut Vec<u8>, ids: &[TaskId]) {
    codec::put_u32(buf, ids.len() as u32);
    for id in ids {
        codec::put_u64(buf, id.0);
    }
}

pub(super) fn read_ids(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<TaskId>, DecodeError> {
    let n = r.count(what, 8)?;
    (0..n).map(|_| r.u64(what).map(TaskId)).collect()
}

/// A task's dependencies: after, waiting_on (ids), failed (u32), then the
/// policy (0 cancel, 1 run); the same in log records and checkpoints.
pub(crate) fn put_deps(buf: &mut Vec<u8>, d: &Dependencies) {
    put_ids(buf, &d.after);
    put_ids(buf, &d.waiting_on);
    codec::put_u32(buf, d.failed);
    codec::put_u8(buf, u8::from(d.if_parent_fails == ParentFailure::Run));
}

pub(crate) fn read_deps(r: &mut Reader<'_>) -> Result<Dependencies, DecodeError> {
    let after = read_ids(r, "after")?;
    let waiting_on = read_ids(r, "waiting_on")?;
    let failed = r.u32("parents failed")?;
    let at = r.position();
    let if_parent_fails = match r.u8("if_parent_fails")? {
        0 => ParentFailure::Cancel,
        1 => ParentFailure::Run,
        _ => {
            return Err(DecodeError {
                what: "if_parent_fails",
                at,
            })
        }
    };
    let sorted = waiting_on.windows(2).all(|w| w[0] < w[1]);
    let within = waiting_on.iter().all(|id| after.contains(id));
    if !sorted || !within || failed as usize > after.len() - waiting_on.len() {
        return Err(DecodeError {
            what: "dependencies",
            at,
        });
    }
    Ok(Dependencies {
        after,
        waiting_on,
        failed,
        if_parent_fails,
        results: Vec::new(),
    })
}

/// A new task's dependencies, then whether it was cancelled at enqueue.
pub(super) fn put_new_deps(buf: &mut Vec<u8>, d: &NewDeps) {
    put_deps(buf, &d.deps);
    codec::put_u8(buf, u8::from(d.cancelled));
}

pub(super) fn read_new_deps(r: &mut Reader<'_>) -> Result<NewDeps, DecodeError> {
    let deps = read_deps(r)?;
    let at = r.position();
    let cancelled = match r.u8("cancelled")? {
        0 => false,
        1 => true,
        _ => {
            return Err(DecodeError {
                what: "cancelled",
                at,
            })
        }
    };
    Ok(NewDeps { deps, cancelled })
}

/// An ending's follow-ups, after the fields of a settle or delete record;
/// written only when there are some, so records of tasks without
/// dependents are what they were before dependencies existed.
pub(super) fn put_follow(buf: &mut Vec<u8>, follow: &[Follow]) {
    if follow.is_empty() {
        return;
    }
    codec::put_u32(buf, follow.len() as u32);
    for f in follow {
        codec::put_u64(buf, f.task);
        codec::put_u64(buf, f.parent);
        codec::put_u32(buf, f.failed);
        codec::put_u8(
            buf,
            match f.outcome {
                Outcome::Pending => 0,
                Outcome::Released => 1,
                Outcome::Cancelled => 2,
            },
        );
    }
}

pub(super) fn read_follow(r: &mut Reader<'_>) -> Result<Vec<Follow>, DecodeError> {
    if r.is_empty() {
        return Ok(Vec::new());
    }
    let n = r.count("follow", 21)?;
    let mut follow = Vec::with_capacity(n);
    for _ in 0..n {
        let task = r.u64("follow task")?;
        let parent = r.u64("follow parent")?;
        let failed = r.u32("follow failed")?;
        let at = r.position();
        let outcome = match r.u8("follow outcome")? {
            0 => Outcome::Pending,
            1 => Outcome::Released,
            2 => Outcome::Cancelled,
            _ => {
                return Err(DecodeError {
                    what: "follow outcome",
                    at,
                })
            }
        };
        follow.push(Follow {
            task,
            parent,
            failed,
            outcome,
        });
    }
    Ok(follow)
}

/// Results by task: a count, then each task's id and JSON text, ids
/// ascending. After the follow-ups of a delete record, written only when
/// there are some: records written before results existed end after their
/// follow-ups. The same in checkpoints, after a task's dependencies.
pub(crate) fn put_results<'a>(
    buf: &mut Vec<u8>,
    results: impl ExactSizeIterator<Item = (u64, &'a TaskResult)>,
) {
    codec::put_u32(buf, results.len() as u32);
    for (id, r) in results {
        codec::put_u64(buf, id);
        codec::put_str(buf, r.as_str());
    }
}

pub(crate) fn read_results(r: &mut Reader<'_>) -> Result<Vec<(u64, TaskResult)>, DecodeError> {
    let n = r.count("results", 12)?;
    let mut results: Vec<(u64, TaskResult)> = Vec::with_capacity(n);
    for _ in 0..n {
        let at = r.position();
        let id = r.u64("result task")?;
        if results.last().is_some_and(|(last, _)| *last >= id) {
            return Err(DecodeError {
                what: "result order",
                at,
            });
        }
        let text = r.str("result")?;
        let result = TaskResult::from_json(text).map_err(|_| DecodeError { what: "result", at })?;
        results.push((id, result));
    }
    Ok(results)
}

pub(super) fn read_new_entry(
    r: &mut Reader<'_>,
    spans: &mut Vec<Span>,
) -> Result<NewEntry, DecodeError> {
    let id = r.u64("id")?;
    let kind = read_name(r, "kind", Kind::new)?;
    let payload = read_task_payload(r, spans)?;
    let priority = r.u16("priority")? as i16;
    let run_at = ts(r, "run_at")?;
    let key = read_opt_name(r, "key", TaskKey::new)?;
    let max_attempts = r.u32("max_attempts")?;
    let at = r.position();
    let tail = r.u8("lease_ms")?;
    if tail & !(ENTRY_LEASE | ENTRY_TRACEPARENT | ENTRY_GROUP | ENTRY_DEPS) != 0 {
        return Err(DecodeError {
            what: "lease_ms",
            at,
        });
    }
    let lease_ms = match tail & ENTRY_LEASE {
        0 => None,
        _ => Some(r.u64("lease_ms")?),
    };
    let traceparent = match tail & ENTRY_TRACEPARENT {
        0 => None,
        _ => Some(read_traceparent(r)?),
    };
    let group = match tail & ENTRY_GROUP {
        0 => None,
        _ => Some(read_name(r, "group", TaskGroup::new)?),
    };
    let deps = match tail & ENTRY_DEPS {
        0 => None,
        _ => Some(Box::new(read_new_deps(r)?)),
    };
    Ok(NewEntry {
        id,
        kind,
        payload,
        priority,
        run_at,
        key,
        max_attempts,
        lease_ms,
        traceparent,
        group,
        deps,
    })
}

/// A traceparent, refused unless valid like any name read back.
pub(crate) fn read_traceparent(r: &mut Reader<'_>) -> Result<String, DecodeError> {
    let at = r.position();
    let text = r.str("traceparent")?;
    match TraceParent::parse(text) {
        Ok(_) => Ok(text.to_string()),
        Err(_) => Err(DecodeError {
            what: "traceparent",
            at,
        }),
    }
}

/// A name that may be absent, encoded as the empty string.
pub(crate) fn read_opt_name<T>(
    r: &mut Reader<'_>,
    what: &'static str,
    make: impl FnOnce(String) -> Result<T, spool_core::NameError>,
) -> Result<Option<T>, DecodeError> {
    let at = r.position();
    let s = r.str(what)?;
    if s.is_empty() {
        return Ok(None);
    }
    make(s.to_string())
        .map(Some)
        .map_err(|_| DecodeError { what, at })
}

pub(crate) fn ts(r: &mut Reader<'_>, what: &'static str) -> Result<Timestamp, DecodeError> {
    Ok(Timestamp(r.i64(what)?))
}

pub(crate) fn read_payload(r: &mut Reader<'_>) -> Result<Payload, DecodeError> {
    let format = read_payload_format(r)?;
    Ok(Payload {
        format,
        bytes: r.owned_bytes("payload")?,
    })
}

/// A payload's format byte: 0 binary, 1 JSON.
fn read_payload_format(r: &mut Reader<'_>) -> Result<PayloadFormat, DecodeError> {
    let at = r.position();
    match r.u8("payload format")? {
        0 => Ok(PayloadFormat::Binary),
        1 => Ok(PayloadFormat::Json),
        _ => Err(DecodeError {
            what: "payload format",
            at,
        }),
    }
}

/// A field that may be absent: a byte, 0 for none, 1 for `read` to follow.
pub(crate) fn read_opt<'a, T>(
    r: &mut Reader<'a>,
    what: &'static str,
    read: impl FnOnce(&mut Reader<'a>) -> Result<T, DecodeError>,
) -> Result<Option<T>, DecodeError> {
    let at = r.position();
    match r.u8(what)? {
        0 => Ok(None),
        1 => read(r).map(Some),
        _ => Err(DecodeError { what, at }),
    }
}

pub(crate) fn read_opt_u64(
    r: &mut Reader<'_>,
    what: &'static str,
) -> Result<Option<u64>, DecodeError> {
    read_opt(r, what, |r| r.u64(what))
}

pub(crate) fn read_name<T>(
    r: &mut Reader<'_>,
    what: &'static str,
    make: impl FnOnce(String) -> Result<T, spool_core::NameError>,
) -> Result<T, DecodeError> {
    let at = r.position();
    make(r.str(what)?.to_string()).map_err(|_| DecodeError { what, at })
}
