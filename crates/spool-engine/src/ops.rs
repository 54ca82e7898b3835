//! The engine's log records: every change to state is one [`Op`].
//!
//! Ops state absolute values (the new attempt, the new run_at, the lease's
//! expiry, which of its failures a task records), never deltas, so applying
//! one twice leaves the same state. That
//! is what lets a checkpoint be copied while writes continue: replaying the
//! log from where the copy began re-applies ops the copy may already hold.
//!
//! The live path builds an `Op`, encodes it into the open group-commit batch
//! and applies it; recovery decodes and applies the same `Op`. One apply
//! function for both is what keeps memory and disk in agreement.

use std::sync::Arc;
use std::time::Duration;

use spool_core::deps::Outcome;
use spool_core::{
    Cadence, Dependencies, Kind, ParentFailure, Payload, PayloadFormat, QueueName, QueueSettings,
    RateLimit, ScheduleSpec, TaskGroup, TaskId, TaskKey, TaskPatch, TaskResult, Timestamp,
    TraceParent,
};
use spool_wal::LogPos;

use crate::codec::{self, DecodeError, Reader};

/// Record kinds in the log (0 is the log's own batch marker).
pub(crate) mod kind {
    pub(crate) const ENQUEUE: u8 = 1;
    pub(crate) const CLAIM: u8 = 2;
    pub(crate) const SETTLE: u8 = 3;
    pub(crate) const EXTEND: u8 = 4;
    pub(crate) const UPDATE: u8 = 5;
    pub(crate) const DELETE: u8 = 6;
    pub(crate) const PUT_QUEUE: u8 = 7;
    pub(crate) const PUT_SCHEDULE: u8 = 8;
    pub(crate) const DELETE_SCHEDULE: u8 = 9;
    pub(crate) const FIRE: u8 = 10;
    pub(crate) const MOVE: u8 = 11;
}

#[derive(Debug, Clone)]
pub(crate) struct NewEntry {
    pub id: u64,
    pub kind: Kind,
    pub payload: Payload,
    pub priority: i16,
    pub run_at: Timestamp,
    pub key: Option<TaskKey>,
    pub max_attempts: u32,
    pub lease_ms: Option<u64>,
    /// A W3C traceparent, valid: checked at enqueue and again when read.
    pub traceparent: Option<String>,
    pub group: Option<TaskGroup>,
    /// What it waits for, as worked out at enqueue (docs/spec.md §3.2).
    pub deps: Option<Box<NewDeps>>,
}

/// A new task's dependencies as the enqueue found them: which parents it
/// still waits for, and whether a failed one already cancelled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewDeps {
    pub deps: Dependencies,
    /// Created and cancelled in the same write: its policy is `cancel` and
    /// a parent had failed by then.
    pub cancelled: bool,
}

/// What one parent's ending did to one task waiting for it, worked out
/// when the ending was committed and logged with it, in the same record:
/// absolute (the parent struck from the task's waits, its failure count
/// as it then stood), so replaying it over a checkpoint that already holds
/// it changes nothing, and never read from the parent's record, which a
/// checkpoint may hold from before or after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Follow {
    pub task: u64,
    pub parent: u64,
    /// The task's count of failed parents afterwards.
    pub failed: u32,
    pub outcome: Outcome,
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

#[derive(Debug, Clone)]
pub(crate) struct Claimed {
    pub id: u64,
    pub attempt: u32,
    pub token: u64,
    pub expires_at: Timestamp,
}

/// A settled task's error field: a failure as Spool wrote it before
/// failures were numbered (attempt, message), and as it writes it now
/// (attempt, number, message).
const ERROR_UNNUMBERED: u8 = 1;
const ERROR_NUMBERED: u8 = 2;

/// Where a settled task goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Scheduled at this time, or ready if it has passed.
    Waiting(Timestamp),
    Dead,
}

/// A leased or dead task leaves its lease: failed, expired, released,
/// snoozed, rescheduled or retried.
#[derive(Debug, Clone)]
pub(crate) struct Settlement {
    pub id: u64,
    /// The task's attempt count afterwards.
    pub attempt: u32,
    pub next: Next,
    pub error: Option<Failure>,
}

/// A failure to record in a settled task's errors.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    /// The attempt that failed.
    pub attempt: u32,
    /// Which of the task's failures this is, counting from 1: what keeps
    /// the append absolute. Replaying the op over a checkpoint that already
    /// holds it finds the task counting this failure already and records
    /// nothing, while a failure just like the one before (same attempt,
    /// time and message, after a retry) is still a new one. `None` in
    /// records written before Spool numbered failures.
    pub number: Option<u64>,
    pub message: String,
}

/// A live payload copied out of a mostly dead segment by compaction.
#[derive(Debug, Clone)]
pub(crate) struct Moved {
    pub id: u64,
    /// Where the task pointed when the payload was read.
    pub from: LogPos,
    pub payload: Payload,
}

#[derive(Debug, Clone)]
pub(crate) enum Op {
    Enqueue {
        now: Timestamp,
        queue: QueueName,
        tasks: Vec<NewEntry>,
    },
    Claim {
        now: Timestamp,
        owner: Arc<str>,
        tasks: Vec<Claimed>,
    },
    Settle {
        now: Timestamp,
        tasks: Vec<Settlement>,
        /// What the tasks that went dead did to the tasks waiting for them.
        follow: Vec<Follow>,
    },
    Extend {
        now: Timestamp,
        id: u64,
        expires_at: Timestamp,
    },
    Update {
        now: Timestamp,
        id: u64,
        patch: TaskPatch,
    },
    /// Tasks completed (acked) or cancelled.
    Delete {
        now: Timestamp,
        ids: Vec<u64>,
        /// What their ending did to the tasks waiting for them.
        follow: Vec<Follow>,
        /// The results acks gave, of tasks that others wait for: each is
        /// logged once, however many tasks receive it.
        results: Vec<(u64, TaskResult)>,
    },
    PutQueue {
        queue: QueueName,
        settings: QueueSettings,
    },
    PutSchedule {
        now: Timestamp,
        spec: ScheduleSpec,
    },
    DeleteSchedule {
        name: Kind,
    },
    /// Compaction: payloads written again at the log's end, each task moved
    /// to its copy if it still points at the old one. The old segment is
    /// then unused and reclaimed like any other.
    Move {
        moves: Vec<Moved>,
    },
    /// A schedule's tick fired: the tick is recorded and, unless its key
    /// was still deduplicating, its task enqueued — in one record, so a
    /// torn tail never keeps one without the other.
    Fire {
        now: Timestamp,
        name: Kind,
        tick: Timestamp,
        queue: QueueName,
        task: Option<NewEntry>,
    },
}

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

/// Where a task payload's bytes lie inside an encoded record body. The log
/// keeps them there: the task's locator is the record's position plus this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// Where the payload's u32 length prefix starts.
    pub offset: u32,
}

/// Encodes a task payload and notes where its bytes went (relative to
/// `base`, the body's start).
fn put_task_payload(buf: &mut Vec<u8>, p: &Payload, base: usize, spans: &mut Vec<Span>) {
    put_payload(buf, p);
    spans.push(Span {
        offset: (buf.len() - p.bytes.len() - 4 - base) as u32,
    });
}

/// Decodes a task payload's format and notes where its bytes are, without
/// copying them: the engine reads them from the log when asked.
fn read_task_payload(r: &mut Reader<'_>, spans: &mut Vec<Span>) -> Result<Payload, DecodeError> {
    let at = r.position();
    let format = match r.u8("payload format")? {
        0 => PayloadFormat::Binary,
        1 => PayloadFormat::Json,
        _ => {
            return Err(DecodeError {
                what: "payload format",
                at,
            })
        }
    };
    spans.push(Span {
        offset: r.position() as u32,
    });
    r.bytes("payload")?;
    Ok(Payload {
        format,
        bytes: Default::default(),
    })
}

/// The fewest bytes an encoded [`NewEntry`] takes.
const NEW_ENTRY_MIN_LEN: usize = 8 + 4 + 5 + 2 + 8 + 4 + 4 + 1;

fn put_new_entry(buf: &mut Vec<u8>, t: &NewEntry, base: usize, spans: &mut Vec<Span>) {
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

fn put_ids(buf: &mut Vec<u8>, ids: &[TaskId]) {
    codec::put_u32(buf, ids.len() as u32);
    for id in ids {
        codec::put_u64(buf, id.0);
    }
}

fn read_ids(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<TaskId>, DecodeError> {
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
fn put_new_deps(buf: &mut Vec<u8>, d: &NewDeps) {
    put_deps(buf, &d.deps);
    codec::put_u8(buf, u8::from(d.cancelled));
}

fn read_new_deps(r: &mut Reader<'_>) -> Result<NewDeps, DecodeError> {
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
fn put_follow(buf: &mut Vec<u8>, follow: &[Follow]) {
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

fn read_follow(r: &mut Reader<'_>) -> Result<Vec<Follow>, DecodeError> {
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

fn read_new_entry(r: &mut Reader<'_>, spans: &mut Vec<Span>) -> Result<NewEntry, DecodeError> {
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

pub(crate) fn put_schedule_spec(buf: &mut Vec<u8>, spec: &ScheduleSpec) {
    codec::put_str(buf, spec.name.as_str());
    codec::put_str(buf, spec.queue.as_str());
    codec::put_str(buf, spec.kind.as_ref().map_or("", |k| k.as_str()));
    put_payload(buf, &spec.payload);
    match &spec.cadence {
        Cadence::Every(d) => {
            codec::put_u8(buf, 0);
            codec::put_u64(buf, u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        }
        Cadence::Cron { expr, tz } => {
            codec::put_u8(buf, 1);
            codec::put_str(buf, expr);
            codec::put_str(buf, tz.as_deref().unwrap_or(""));
        }
    }
    put_opt_u64(
        buf,
        spec.deadline
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
    );
}

pub(crate) fn read_schedule_spec(r: &mut Reader<'_>) -> Result<ScheduleSpec, DecodeError> {
    let name = read_name(r, "schedule", Kind::new)?;
    let queue = read_name(r, "queue", QueueName::new)?;
    let kind = read_opt_name(r, "kind", Kind::new)?;
    let payload = read_payload(r)?;
    let at = r.position();
    let cadence = match r.u8("cadence")? {
        0 => Cadence::Every(Duration::from_millis(r.u64("every")?)),
        1 => {
            let expr = r.str("cron")?.to_string();
            let tz = r.str("tz")?;
            Cadence::Cron {
                expr,
                tz: (!tz.is_empty()).then(|| tz.to_string()),
            }
        }
        _ => {
            return Err(DecodeError {
                what: "cadence",
                at,
            })
        }
    };
    let deadline = read_opt_u64(r, "deadline")?.map(Duration::from_millis);
    Ok(ScheduleSpec {
        name,
        queue,
        kind,
        payload,
        cadence,
        deadline,
    })
}

/// The last byte of a queue's settings says whether it is paused (bit 0)
/// and which limits follow it: a rate limit (limit u32, period_ms u64,
/// burst u32) when bit 1 is set, then a limit on tasks leased at once
/// (u32) when bit 2 is, then a limit on the tasks of one group leased at
/// once (u32) when bit 3 is. Spool wrote only 0 and 1 there before queues had
/// limits, so those records read as they always did, and settings without
/// limits are still written byte for byte as before.
const SETTINGS_PAUSED: u8 = 1;
const SETTINGS_RATE_LIMIT: u8 = 2;
const SETTINGS_MAX_LEASED: u8 = 4;
const SETTINGS_GROUP_CONCURRENCY: u8 = 8;

pub(crate) fn put_settings(buf: &mut Vec<u8>, s: &QueueSettings) {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    codec::put_u64(buf, ms(s.lease));
    codec::put_u32(buf, s.max_attempts);
    codec::put_u64(buf, ms(s.backoff_base));
    codec::put_u64(buf, ms(s.backoff_max));
    codec::put_u64(buf, ms(s.dedup_window));
    codec::put_u64(buf, s.max_payload);
    let rate = if s.rate_limit.is_some() {
        SETTINGS_RATE_LIMIT
    } else {
        0
    };
    let leased = if s.max_leased.is_some() {
        SETTINGS_MAX_LEASED
    } else {
        0
    };
    let groups = if s.group_concurrency.is_some() {
        SETTINGS_GROUP_CONCURRENCY
    } else {
        0
    };
    codec::put_u8(buf, u8::from(s.paused) | rate | leased | groups);
    if let Some(r) = &s.rate_limit {
        codec::put_u32(buf, r.limit);
        codec::put_u64(buf, ms(r.period));
        codec::put_u32(buf, r.burst);
    }
    if let Some(n) = s.max_leased {
        codec::put_u32(buf, n);
    }
    if let Some(n) = s.group_concurrency {
        codec::put_u32(buf, n);
    }
}

pub(crate) fn ts(r: &mut Reader<'_>, what: &'static str) -> Result<Timestamp, DecodeError> {
    Ok(Timestamp(r.i64(what)?))
}

pub(crate) fn read_payload(r: &mut Reader<'_>) -> Result<Payload, DecodeError> {
    let at = r.position();
    let format = match r.u8("payload format")? {
        0 => PayloadFormat::Binary,
        1 => PayloadFormat::Json,
        _ => {
            return Err(DecodeError {
                what: "payload format",
                at,
            })
        }
    };
    Ok(Payload {
        format,
        bytes: r.owned_bytes("payload")?,
    })
}

pub(crate) fn read_opt_u64(
    r: &mut Reader<'_>,
    what: &'static str,
) -> Result<Option<u64>, DecodeError> {
    let at = r.position();
    match r.u8(what)? {
        0 => Ok(None),
        1 => Ok(Some(r.u64(what)?)),
        _ => Err(DecodeError { what, at }),
    }
}

pub(crate) fn read_name<T>(
    r: &mut Reader<'_>,
    what: &'static str,
    make: impl FnOnce(String) -> Result<T, spool_core::NameError>,
) -> Result<T, DecodeError> {
    let at = r.position();
    make(r.str(what)?.to_string()).map_err(|_| DecodeError { what, at })
}

pub(crate) fn read_settings(r: &mut Reader<'_>) -> Result<QueueSettings, DecodeError> {
    let ms = Duration::from_millis;
    let lease = ms(r.u64("lease")?);
    let max_attempts = r.u32("max_attempts")?;
    let backoff_base = ms(r.u64("backoff_base")?);
    let backoff_max = ms(r.u64("backoff_max")?);
    let dedup_window = ms(r.u64("dedup_window")?);
    let max_payload = r.u64("max_payload")?;
    let at = r.position();
    let flags = r.u8("paused")?;
    let known =
        SETTINGS_PAUSED | SETTINGS_RATE_LIMIT | SETTINGS_MAX_LEASED | SETTINGS_GROUP_CONCURRENCY;
    if flags & !known != 0 {
        return Err(DecodeError { what: "paused", at });
    }
    let paused = flags & SETTINGS_PAUSED != 0;
    let rate_limit = match flags & SETTINGS_RATE_LIMIT {
        0 => None,
        _ => Some(RateLimit {
            limit: r.u32("rate limit")?,
            period: ms(r.u64("rate period")?),
            burst: r.u32("rate burst")?,
        }),
    };
    let max_leased = match flags & SETTINGS_MAX_LEASED {
        0 => None,
        _ => Some(r.u32("max_leased")?),
    };
    let group_concurrency = match flags & SETTINGS_GROUP_CONCURRENCY {
        0 => None,
        _ => Some(r.u32("group_concurrency")?),
    };
    Ok(QueueSettings {
        lease,
        max_attempts,
        backoff_base,
        backoff_max,
        dedup_window,
        max_payload,
        paused,
        rate_limit,
        max_leased,
        group_concurrency,
    })
}

impl Op {
    pub(crate) fn kind(&self) -> u8 {
        match self {
            Op::Enqueue { .. } => kind::ENQUEUE,
            Op::Claim { .. } => kind::CLAIM,
            Op::Settle { .. } => kind::SETTLE,
            Op::Extend { .. } => kind::EXTEND,
            Op::Update { .. } => kind::UPDATE,
            Op::Delete { .. } => kind::DELETE,
            Op::PutQueue { .. } => kind::PUT_QUEUE,
            Op::PutSchedule { .. } => kind::PUT_SCHEDULE,
            Op::DeleteSchedule { .. } => kind::DELETE_SCHEDULE,
            Op::Fire { .. } => kind::FIRE,
            Op::Move { .. } => kind::MOVE,
        }
    }

    /// Encodes the op's body; `spans` gets where each task payload went.
    pub(crate) fn encode(&self, buf: &mut Vec<u8>, spans: &mut Vec<Span>) {
        let base = buf.len();
        match self {
            Op::Enqueue { now, queue, tasks } => {
                put_ts(buf, *now);
                codec::put_str(buf, queue.as_str());
                codec::put_u32(buf, tasks.len() as u32);
                for t in tasks {
                    put_new_entry(buf, t, base, spans);
                }
            }
            Op::Claim { now, owner, tasks } => {
                put_ts(buf, *now);
                codec::put_str(buf, owner);
                codec::put_u32(buf, tasks.len() as u32);
                for t in tasks {
                    codec::put_u64(buf, t.id);
                    codec::put_u32(buf, t.attempt);
                    codec::put_u64(buf, t.token);
                    put_ts(buf, t.expires_at);
                }
            }
            Op::Settle { now, tasks, follow } => {
                put_ts(buf, *now);
                codec::put_u32(buf, tasks.len() as u32);
                for t in tasks {
                    codec::put_u64(buf, t.id);
                    codec::put_u32(buf, t.attempt);
                    match t.next {
                        Next::Waiting(at) => {
                            codec::put_u8(buf, 0);
                            put_ts(buf, at);
                        }
                        Next::Dead => codec::put_u8(buf, 1),
                    }
                    match &t.error {
                        Some(f) => {
                            match f.number {
                                Some(n) => {
                                    codec::put_u8(buf, ERROR_NUMBERED);
                                    codec::put_u32(buf, f.attempt);
                                    codec::put_u64(buf, n);
                                }
                                None => {
                                    codec::put_u8(buf, ERROR_UNNUMBERED);
                                    codec::put_u32(buf, f.attempt);
                                }
                            }
                            codec::put_str(buf, &f.message);
                        }
                        None => codec::put_u8(buf, 0),
                    }
                }
                put_follow(buf, follow);
            }
            Op::Extend {
                now,
                id,
                expires_at,
            } => {
                put_ts(buf, *now);
                codec::put_u64(buf, *id);
                put_ts(buf, *expires_at);
            }
            Op::Update { now, id, patch } => {
                put_ts(buf, *now);
                codec::put_u64(buf, *id);
                match &patch.payload {
                    Some(p) => {
                        codec::put_u8(buf, 1);
                        put_task_payload(buf, p, base, spans);
                    }
                    None => codec::put_u8(buf, 0),
                }
                put_opt_u64(buf, patch.run_at.map(|t| t.as_millis() as u64));
                put_opt_u64(buf, patch.priority.map(|p| p as u16 as u64));
            }
            Op::Delete {
                now,
                ids,
                follow,
                results,
            } => {
                put_ts(buf, *now);
                codec::put_u32(buf, ids.len() as u32);
                for id in ids {
                    codec::put_u64(buf, *id);
                }
                put_follow(buf, follow);
                if !follow.is_empty() && !results.is_empty() {
                    put_results(buf, results.iter().map(|(id, r)| (*id, r)));
                }
            }
            Op::PutQueue { queue, settings } => {
                codec::put_str(buf, queue.as_str());
                put_settings(buf, settings);
            }
            Op::PutSchedule { now, spec } => {
                put_ts(buf, *now);
                put_schedule_spec(buf, spec);
            }
            Op::DeleteSchedule { name } => codec::put_str(buf, name.as_str()),
            Op::Move { moves } => {
                codec::put_u32(buf, moves.len() as u32);
                for m in moves {
                    codec::put_u64(buf, m.id);
                    codec::put_u64(buf, m.from.seq);
                    codec::put_u64(buf, m.from.offset);
                    put_task_payload(buf, &m.payload, base, spans);
                }
            }
            Op::Fire {
                now,
                name,
                tick,
                queue,
                task,
            } => {
                put_ts(buf, *now);
                codec::put_str(buf, name.as_str());
                put_ts(buf, *tick);
                codec::put_str(buf, queue.as_str());
                match task {
                    Some(t) => {
                        codec::put_u8(buf, 1);
                        put_new_entry(buf, t, base, spans);
                    }
                    None => codec::put_u8(buf, 0),
                }
            }
        }
    }

    /// Decodes a record body; the whole body must be consumed. Task
    /// payloads are not copied (their bytes come back empty): `spans` gets
    /// where they lie in `body`.
    pub(crate) fn decode(kind: u8, body: &[u8], spans: &mut Vec<Span>) -> Result<Op, DecodeError> {
        let mut r = Reader::new(body);
        let op = match kind {
            kind::ENQUEUE => {
                let now = ts(&mut r, "now")?;
                let queue = read_name(&mut r, "queue", QueueName::new)?;
                let n = r.count("tasks", NEW_ENTRY_MIN_LEN)?;
                let mut tasks = Vec::with_capacity(n);
                for _ in 0..n {
                    tasks.push(read_new_entry(&mut r, spans)?);
                }
                Op::Enqueue { now, queue, tasks }
            }
            kind::CLAIM => {
                let now = ts(&mut r, "now")?;
                let owner: Arc<str> = Arc::from(r.str("owner")?);
                let n = r.count("claimed", 28)?;
                let mut tasks = Vec::with_capacity(n);
                for _ in 0..n {
                    tasks.push(Claimed {
                        id: r.u64("id")?,
                        attempt: r.u32("attempt")?,
                        token: r.u64("token")?,
                        expires_at: ts(&mut r, "expires_at")?,
                    });
                }
                Op::Claim { now, owner, tasks }
            }
            kind::SETTLE => {
                let now = ts(&mut r, "now")?;
                let n = r.count("settled", 14)?;
                let mut tasks = Vec::with_capacity(n);
                for _ in 0..n {
                    let id = r.u64("id")?;
                    let attempt = r.u32("attempt")?;
                    let at = r.position();
                    let next = match r.u8("next")? {
                        0 => Next::Waiting(ts(&mut r, "run_at")?),
                        1 => Next::Dead,
                        _ => return Err(DecodeError { what: "next", at }),
                    };
                    let at = r.position();
                    let error = match r.u8("error")? {
                        0 => None,
                        tag @ (ERROR_UNNUMBERED | ERROR_NUMBERED) => {
                            let attempt = r.u32("error attempt")?;
                            let number = match tag {
                                ERROR_NUMBERED => Some(r.u64("error number")?),
                                _ => None,
                            };
                            Some(Failure {
                                attempt,
                                number,
                                message: r.str("message")?.to_string(),
                            })
                        }
                        _ => return Err(DecodeError { what: "error", at }),
                    };
                    tasks.push(Settlement {
                        id,
                        attempt,
                        next,
                        error,
                    });
                }
                let follow = read_follow(&mut r)?;
                Op::Settle { now, tasks, follow }
            }
            kind::EXTEND => Op::Extend {
                now: ts(&mut r, "now")?,
                id: r.u64("id")?,
                expires_at: ts(&mut r, "expires_at")?,
            },
            kind::UPDATE => {
                let now = ts(&mut r, "now")?;
                let id = r.u64("id")?;
                let at = r.position();
                let payload = match r.u8("has payload")? {
                    0 => None,
                    1 => Some(read_task_payload(&mut r, spans)?),
                    _ => {
                        return Err(DecodeError {
                            what: "has payload",
                            at,
                        })
                    }
                };
                let run_at = read_opt_u64(&mut r, "run_at")?.map(|v| Timestamp(v as i64));
                let priority = read_opt_u64(&mut r, "priority")?.map(|v| v as u16 as i16);
                Op::Update {
                    now,
                    id,
                    patch: TaskPatch {
                        payload,
                        run_at,
                        priority,
                    },
                }
            }
            kind::DELETE => {
                let now = ts(&mut r, "now")?;
                let n = r.count("ids", 8)?;
                let mut ids = Vec::with_capacity(n);
                for _ in 0..n {
                    ids.push(r.u64("id")?);
                }
                let follow = read_follow(&mut r)?;
                let results = if r.is_empty() {
                    Vec::new()
                } else {
                    read_results(&mut r)?
                };
                Op::Delete {
                    now,
                    ids,
                    follow,
                    results,
                }
            }
            kind::PUT_QUEUE => Op::PutQueue {
                queue: read_name(&mut r, "queue", QueueName::new)?,
                settings: read_settings(&mut r)?,
            },
            kind::PUT_SCHEDULE => Op::PutSchedule {
                now: ts(&mut r, "now")?,
                spec: read_schedule_spec(&mut r)?,
            },
            kind::DELETE_SCHEDULE => Op::DeleteSchedule {
                name: read_name(&mut r, "schedule", Kind::new)?,
            },
            kind::MOVE => {
                let n = r.count("moves", 29)?;
                let mut moves = Vec::with_capacity(n);
                for _ in 0..n {
                    let id = r.u64("id")?;
                    let from = LogPos {
                        seq: r.u64("from segment")?,
                        offset: r.u64("from offset")?,
                    };
                    let payload = read_task_payload(&mut r, spans)?;
                    moves.push(Moved { id, from, payload });
                }
                Op::Move { moves }
            }
            kind::FIRE => {
                let now = ts(&mut r, "now")?;
                let name = read_name(&mut r, "schedule", Kind::new)?;
                let tick = ts(&mut r, "tick")?;
                let queue = read_name(&mut r, "queue", QueueName::new)?;
                let at = r.position();
                let task = match r.u8("has task")? {
                    0 => None,
                    1 => Some(read_new_entry(&mut r, spans)?),
                    _ => {
                        return Err(DecodeError {
                            what: "has task",
                            at,
                        })
                    }
                };
                Op::Fire {
                    now,
                    name,
                    tick,
                    queue,
                    task,
                }
            }
            _ => {
                return Err(DecodeError {
                    what: "record kind",
                    at: 0,
                })
            }
        };
        if !r.is_empty() {
            return Err(DecodeError {
                what: "trailing bytes",
                at: r.position(),
            });
        }
        Ok(op)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn settle_failure(number: Option<u64>) -> Op {
        Op::Settle {
            now: Timestamp(5),
            tasks: vec![Settlement {
                id: 9,
                attempt: 2,
                next: Next::Dead,
                error: Some(Failure {
                    attempt: 2,
                    number,
                    message: "boom".into(),
                }),
            }],
            follow: Vec::new(),
        }
    }

    fn decoded_failure(body: &[u8]) -> Failure {
        match Op::decode(kind::SETTLE, body, &mut Vec::new()).unwrap() {
            Op::Settle { mut tasks, .. } => tasks.remove(0).error.unwrap(),
            other => panic!("decoded {other:?}"),
        }
    }

    #[test]
    fn a_failure_keeps_its_number_through_the_log() {
        let mut body = Vec::new();
        settle_failure(Some(7)).encode(&mut body, &mut Vec::new());
        let f = decoded_failure(&body);
        assert_eq!(
            (f.attempt, f.number, f.message.as_str()),
            (2, Some(7), "boom")
        );
    }

    #[test]
    fn a_failure_written_before_numbers_still_reads() {
        // The settle record as Spool wrote it before failures were numbered.
        let mut old = Vec::new();
        put_ts(&mut old, Timestamp(5));
        codec::put_u32(&mut old, 1);
        codec::put_u64(&mut old, 9);
        codec::put_u32(&mut old, 2);
        codec::put_u8(&mut old, 1);
        codec::put_u8(&mut old, 1);
        codec::put_u32(&mut old, 2);
        codec::put_str(&mut old, "boom");
        let f = decoded_failure(&old);
        assert_eq!((f.attempt, f.number, f.message.as_str()), (2, None, "boom"));
        let mut body = Vec::new();
        settle_failure(None).encode(&mut body, &mut Vec::new());
        assert_eq!(body, old);
    }

    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn enqueue(lease_ms: Option<u64>, traceparent: Option<&str>) -> Op {
        Op::Enqueue {
            now: Timestamp(5),
            queue: QueueName::new("q").unwrap(),
            tasks: vec![NewEntry {
                id: 9,
                kind: Kind::new("k").unwrap(),
                payload: Payload::binary(vec![1, 2]),
                priority: -1,
                run_at: Timestamp(6),
                key: None,
                max_attempts: 3,
                lease_ms,
                traceparent: traceparent.map(str::to_string),
                group: None,
                deps: None,
            }],
        }
    }

    #[test]
    fn dependencies_and_follow_ups_go_through_the_log() {
        let deps = NewDeps {
            deps: Dependencies {
                after: vec![TaskId(4), TaskId(2)],
                waiting_on: vec![TaskId(2)],
                failed: 1,
                if_parent_fails: ParentFailure::Run,
                results: Vec::new(),
            },
            cancelled: false,
        };
        let mut op = enqueue(Some(250), Some(TRACEPARENT));
        if let Op::Enqueue { tasks, .. } = &mut op {
            tasks[0].group = Some(TaskGroup::new("g").unwrap());
            tasks[0].deps = Some(Box::new(deps.clone()));
        }
        let mut body = Vec::new();
        op.encode(&mut body, &mut Vec::new());
        let t = decoded_entry(&body).unwrap();
        assert_eq!(t.deps.as_deref(), Some(&deps));
        assert_eq!(t.group.unwrap().as_str(), "g");

        let follow = vec![Follow {
            task: 9,
            parent: 2,
            failed: 1,
            outcome: Outcome::Released,
        }];
        let result = TaskResult::from_json(r#"{"rows":3}"#).unwrap();
        for results in [Vec::new(), vec![(2, result)]] {
            let delete = Op::Delete {
                now: Timestamp(5),
                ids: vec![2],
                follow: follow.clone(),
                results: results.clone(),
            };
            let mut body = Vec::new();
            delete.encode(&mut body, &mut Vec::new());
            match Op::decode(kind::DELETE, &body, &mut Vec::new()).unwrap() {
                Op::Delete {
                    ids,
                    follow: f,
                    results: r,
                    ..
                } => assert_eq!((ids, f, r), (vec![2], follow.clone(), results)),
                other => panic!("decoded {other:?}"),
            }
        }
        // Without follow-ups a delete is written as it always was.
        let plain = Op::Delete {
            now: Timestamp(5),
            ids: vec![2],
            follow: Vec::new(),
            results: Vec::new(),
        };
        let mut plain_body = Vec::new();
        plain.encode(&mut plain_body, &mut Vec::new());
        assert_eq!(plain_body.len(), 8 + 4 + 8);
    }

    fn decoded_entry(body: &[u8]) -> Result<NewEntry, DecodeError> {
        match Op::decode(kind::ENQUEUE, body, &mut Vec::new())? {
            Op::Enqueue { mut tasks, .. } => Ok(tasks.remove(0)),
            other => panic!("decoded {other:?}"),
        }
    }

    #[test]
    fn a_traceparent_goes_through_the_log_with_or_without_a_lease() {
        for lease_ms in [None, Some(250)] {
            let mut body = Vec::new();
            enqueue(lease_ms, Some(TRACEPARENT)).encode(&mut body, &mut Vec::new());
            let t = decoded_entry(&body).unwrap();
            assert_eq!(t.lease_ms, lease_ms);
            assert_eq!(t.traceparent.as_deref(), Some(TRACEPARENT));
        }
    }

    #[test]
    fn a_group_goes_through_the_log_beside_a_lease_and_a_traceparent() {
        for (lease_ms, traceparent) in [(None, None), (Some(250), Some(TRACEPARENT))] {
            let mut op = enqueue(lease_ms, traceparent);
            if let Op::Enqueue { tasks, .. } = &mut op {
                tasks[0].group = Some(TaskGroup::new("customer 7").unwrap());
            }
            let mut body = Vec::new();
            op.encode(&mut body, &mut Vec::new());
            let t = decoded_entry(&body).unwrap();
            assert_eq!(
                (t.lease_ms, t.traceparent.as_deref()),
                (lease_ms, traceparent)
            );
            assert_eq!(t.group.as_ref().map(TaskGroup::as_str), Some("customer 7"));
        }
    }

    #[test]
    fn an_entry_without_a_traceparent_is_written_as_before() {
        for lease_ms in [None, Some(250)] {
            // The entry's tail as Spool wrote it before trace context: the
            // lease as an optional u64, nothing after it.
            let mut body = Vec::new();
            enqueue(lease_ms, None).encode(&mut body, &mut Vec::new());
            let mut tail = Vec::new();
            put_opt_u64(&mut tail, lease_ms);
            assert!(body.ends_with(&tail));
            let t = decoded_entry(&body).unwrap();
            assert_eq!((t.lease_ms, t.traceparent), (lease_ms, None));
        }
    }

    #[test]
    fn an_unknown_tail_or_a_bad_traceparent_is_damage() {
        let mut body = Vec::new();
        enqueue(None, None).encode(&mut body, &mut Vec::new());
        let last = body.len() - 1;
        body[last] = 16;
        assert_eq!(decoded_entry(&body).unwrap_err().what, "lease_ms");

        let mut body = Vec::new();
        enqueue(None, Some(TRACEPARENT)).encode(&mut body, &mut Vec::new());
        let last = body.len() - 1;
        body[last] = b'g';
        assert_eq!(decoded_entry(&body).unwrap_err().what, "traceparent");
    }

    fn put_queue(settings: QueueSettings) -> Op {
        Op::PutQueue {
            queue: QueueName::new("q").unwrap(),
            settings,
        }
    }

    fn decoded_settings(body: &[u8]) -> Result<QueueSettings, DecodeError> {
        match Op::decode(kind::PUT_QUEUE, body, &mut Vec::new())? {
            Op::PutQueue { settings, .. } => Ok(settings),
            other => panic!("decoded {other:?}"),
        }
    }

    #[test]
    fn limits_go_through_the_log() {
        let rate_limit = Some(RateLimit {
            limit: 7,
            period: Duration::from_millis(250),
            burst: 3,
        });
        let cases = [
            (rate_limit, None, None),
            (None, Some(9), None),
            (rate_limit, Some(9), None),
            (None, None, Some(2)),
            (rate_limit, Some(9), Some(2)),
        ];
        for (rate_limit, max_leased, group_concurrency) in cases {
            let settings = QueueSettings {
                paused: true,
                rate_limit,
                max_leased,
                group_concurrency,
                ..QueueSettings::default()
            };
            let mut body = Vec::new();
            put_queue(settings.clone()).encode(&mut body, &mut Vec::new());
            assert_eq!(decoded_settings(&body).unwrap(), settings);
        }
    }

    #[test]
    fn settings_without_limits_are_written_as_before() {
        for paused in [false, true] {
            // The settings as Spool wrote them before queues had limits:
            // the paused flag as the last byte, nothing after it.
            let settings = QueueSettings {
                paused,
                ..QueueSettings::default()
            };
            let mut body = Vec::new();
            put_queue(settings.clone()).encode(&mut body, &mut Vec::new());
            assert_eq!(body.last(), Some(&u8::from(paused)));
            assert_eq!(decoded_settings(&body).unwrap(), settings);
        }
        let mut body = Vec::new();
        put_queue(QueueSettings::default()).encode(&mut body, &mut Vec::new());
        let last = body.len() - 1;
        body[last] = 16;
        assert_eq!(decoded_settings(&body).unwrap_err().what, "paused");
    }
}
