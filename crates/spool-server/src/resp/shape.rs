//! How the store's values look in a RESP answer: tasks, queue statistics,
//! queue settings and schedules, as maps with the same field names as the
//! HTTP API, times in Unix milliseconds and durations in milliseconds.
//!
//! Invariants: a payload is the stored bytes, never re-encoded, and its
//! `format` says how it was given (`json` or `binary`), so a client can
//! rebuild the exact [`Payload`]; a lease token appears only where the
//! caller holds the lease (a claim), never in `GET` or `LIST`.

use std::time::Duration;

use spool_core::time::duration_millis;
use spool_core::{
    Cadence, Dependencies, EnqueueOutcome, GroupStats, Payload, PayloadFormat, QueueSettings,
    QueueStats, RateLimit, Schedule, StateCounts, Task, TaskId,
};

use super::reply::{Proto, Reply};

pub(super) fn count(n: u64) -> Reply {
    Reply::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

pub(super) fn ms(d: Duration) -> Reply {
    Reply::Int(duration_millis(d))
}

fn or_null<T>(v: Option<T>, f: impl FnOnce(T) -> Reply) -> Reply {
    v.map_or(Reply::Null, f)
}

fn format(p: &Payload) -> Reply {
    Reply::Simple(match p.format {
        PayloadFormat::Json => "json",
        PayloadFormat::Binary => "binary",
    })
}

/// Every field of a task (docs/spec.md §2); `token` too when `with_token`.
pub(super) fn task(t: &Task, with_token: bool) -> Reply {
    let mut fields = vec![
        ("id", Reply::Int(t.id.0 as i64)),
        ("queue", Reply::text(t.queue.to_string())),
        ("kind", Reply::text(t.kind.to_string())),
        ("payload", Reply::Bulk(t.payload.bytes.clone())),
        ("format", format(&t.payload)),
        ("priority", Reply::Int(i64::from(t.priority))),
        ("run_at", Reply::Int(t.run_at.0)),
        (
            "key",
            or_null(t.key.as_ref(), |k| Reply::text(k.to_string())),
        ),
        ("attempt", Reply::Int(i64::from(t.attempt))),
        ("max_attempts", Reply::Int(i64::from(t.max_attempts))),
        ("lease_ms", or_null(t.lease_ms, count)),
        ("state", Reply::Simple(t.state.as_str())),
        (
            "lease_owner",
            or_null(t.lease.as_ref(), |l| Reply::text(l.owner.clone())),
        ),
        (
            "lease_expires_at",
            or_null(t.lease.as_ref(), |l| Reply::Int(l.expires_at.0)),
        ),
        (
            "errors",
            Reply::Array(
                t.errors
                    .iter()
                    .map(|e| {
                        Reply::Map(vec![
                            ("attempt", Reply::Int(i64::from(e.attempt))),
                            ("at", Reply::Int(e.at.0)),
                            ("message", Reply::text(e.message.clone())),
                        ])
                    })
                    .collect(),
            ),
        ),
        ("created_at", Reply::Int(t.created_at.0)),
        ("updated_at", Reply::Int(t.updated_at.0)),
        (
            "traceparent",
            or_null(t.traceparent.as_ref(), |tp| Reply::text(tp.clone())),
        ),
        (
            "group",
            or_null(t.group.as_ref(), |g| Reply::text(g.to_string())),
        ),
    ];
    if let Some(d) = t.deps.as_deref() {
        fields.extend(deps(d));
    }
    if with_token {
        let token = t.lease.as_ref().map(|l| l.token.to_string());
        fields.push(("token", or_null(token, Reply::text)));
    }
    Reply::Map(fields)
}

/// A task's dependencies, with the names of the HTTP API; only a task that
/// has some carries them (docs/spec.md §3.2). `parent_results`, when there
/// are some, is an array of `[id, json]` pairs: the JSON as text, as a
/// payload is.
fn deps(d: &Dependencies) -> Vec<(&'static str, Reply)> {
    let ids = |ids: &[TaskId]| Reply::Array(ids.iter().map(|id| count(id.0)).collect());
    let mut fields = vec![
        ("after", ids(&d.after)),
        ("waiting_on", ids(&d.waiting_on)),
        ("parents_failed", Reply::Int(i64::from(d.failed))),
        ("parents_completed", Reply::Int(i64::from(d.completed()))),
        ("if_parent_fails", Reply::Simple(d.if_parent_fails.as_str())),
    ];
    if !d.results.is_empty() {
        let pairs = d
            .results
            .iter()
            .map(|(id, r)| Reply::Array(vec![count(id.0), Reply::text(r.as_str().to_owned())]));
        fields.push(("parent_results", Reply::Array(pairs.collect())));
    }
    fields
}

fn counts(c: &StateCounts) -> [(&'static str, Reply); 5] {
    [
        ("scheduled", count(c.scheduled)),
        ("ready", count(c.ready)),
        ("leased", count(c.leased)),
        ("dead", count(c.dead)),
        ("pending", count(c.pending)),
    ]
}

/// One queue of `QUEUES`: its counts, the same per kind, how long its
/// oldest ready task has waited, and its rate limit's tokens left.
pub(super) fn queue_stats(q: &QueueStats) -> Reply {
    let mut fields = vec![
        ("name", Reply::text(q.name.to_string())),
        ("paused", Reply::Bool(q.paused)),
    ];
    fields.extend(counts(&q.counts));
    let kinds = q
        .kinds
        .iter()
        .map(|(kind, c)| {
            let mut k = vec![("kind", Reply::text(kind.to_string()))];
            k.extend(counts(c));
            Reply::Map(k)
        })
        .collect();
    fields.push(("kinds", Reply::Array(kinds)));
    fields.push(("oldest_ready_ms", or_null(q.oldest_ready_age, ms)));
    fields.push(("rate_tokens", or_null(q.rate_tokens, tokens)));
    Reply::Map(fields)
}

pub(super) fn settings(s: &QueueSettings) -> Reply {
    Reply::Map(vec![
        ("lease_ms", ms(s.lease)),
        ("max_attempts", Reply::Int(i64::from(s.max_attempts))),
        ("backoff_base_ms", ms(s.backoff_base)),
        ("backoff_max_ms", ms(s.backoff_max)),
        ("dedup_window_ms", ms(s.dedup_window)),
        ("max_payload", count(s.max_payload)),
        ("paused", Reply::Bool(s.paused)),
        ("rate_limit", or_null(s.rate_limit, rate_limit)),
        (
            "max_leased",
            or_null(s.max_leased, |n| Reply::Int(i64::from(n))),
        ),
        (
            "group_concurrency",
            or_null(s.group_concurrency, |n| Reply::Int(i64::from(n))),
        ),
        ("group_rate_limit", or_null(s.group_rate_limit, rate_limit)),
    ])
}

/// A rate limit: `[limit, period_ms, burst]`.
fn rate_limit(r: RateLimit) -> Reply {
    Reply::Array(vec![
        Reply::Int(i64::from(r.limit)),
        ms(r.period),
        Reply::Int(i64::from(r.burst)),
    ])
}

/// One group of `GROUPS`: its tasks waiting and leased, and its rate
/// limit's tokens left.
pub(super) fn group_stats(g: &GroupStats) -> Reply {
    Reply::Map(vec![
        ("group", Reply::text(g.group.to_string())),
        ("waiting", count(g.waiting)),
        ("leased", count(g.leased)),
        ("rate_tokens", or_null(g.rate_tokens, tokens)),
    ])
}

/// A rate limit's whole tokens left.
fn tokens(n: u32) -> Reply {
    Reply::Int(i64::from(n))
}

pub(super) fn schedule(s: &Schedule) -> Reply {
    let spec = &s.spec;
    let (every, cron, tz) = match &spec.cadence {
        Cadence::Every(d) => (Some(*d), None, None),
        Cadence::Cron { expr, tz } => (None, Some(expr.clone()), tz.clone()),
    };
    Reply::Map(vec![
        ("name", Reply::text(spec.name.to_string())),
        ("queue", Reply::text(spec.queue.to_string())),
        (
            "kind",
            or_null(spec.kind.as_ref(), |k| Reply::text(k.to_string())),
        ),
        ("payload", Reply::Bulk(spec.payload.bytes.clone())),
        ("format", format(&spec.payload)),
        ("every_ms", or_null(every, ms)),
        ("cron", or_null(cron, Reply::text)),
        ("tz", or_null(tz, Reply::text)),
        ("deadline_ms", or_null(spec.deadline, ms)),
        ("last_fire_at", or_null(s.last_fire_at, |t| Reply::Int(t.0))),
        (
            "next_fire_at",
            or_null(s.next_fire_at(), |t| Reply::Int(t.0)),
        ),
        ("created_at", Reply::Int(s.created_at.0)),
    ])
}

/// RESP2: the id. RESP3: `{id, duplicate}`.
pub(super) fn enqueued(o: EnqueueOutcome, proto: Proto) -> Reply {
    match proto {
        Proto::Resp2 => Reply::Int(o.id.0 as i64),
        Proto::Resp3 => Reply::Map(vec![
            ("id", Reply::Int(o.id.0 as i64)),
            ("duplicate", Reply::Bool(o.duplicate)),
        ]),
    }
}
