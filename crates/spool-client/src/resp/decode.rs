//! From the server's answers to Spool's types: tasks, statistics, settings
//! and schedules, read from the maps docs/resp.md describes.
//!
//! Invariants: an answer that lacks a field or has one of the wrong type is
//! `StoreError::Internal` (the server and this client disagree), never a
//! default; a `-CODE message` answer becomes the `StoreError` the same code
//! gets over HTTP.

use std::time::Duration;

use bytes::Bytes;
use spool_core::wire::{DepsJson, ParentResultJson};
use spool_core::{
    Cadence, Dependencies, EnqueueOutcome, ErrorRecord, GroupStats, Kind, Lease, LeaseToken,
    ParentFailure, Payload, QueueName, QueueSettings, QueueStats, RateLimit, Schedule,
    ScheduleSpec, StateCounts, StoreError, Task, TaskGroup, TaskId, TaskKey, TaskState, Timestamp,
};

use super::value::Value;
use crate::http::{from_code, Target};

pub(super) fn bad_answer(what: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("unexpected answer from the server: {what}"))
}

/// The error an error answer stands for; other values pass.
pub(super) fn check(v: Value, target: Target<'_>) -> Result<Value, StoreError> {
    match v {
        Value::Error(line) => Err(error(&line, target)),
        v => Ok(v),
    }
}

pub(super) fn error(line: &str, target: Target<'_>) -> StoreError {
    let (code, message) = line.split_once(' ').unwrap_or((line, ""));
    from_code(&code.to_ascii_lowercase(), message.to_owned(), target)
}

pub(super) fn ok(v: Value) -> Result<(), StoreError> {
    match v {
        Value::Simple(s) if s == "OK" => Ok(()),
        other => Err(bad_answer(format!("{other:?} where OK was expected"))),
    }
}

pub(super) fn int(v: &Value) -> Result<i64, StoreError> {
    match v {
        Value::Int(n) => Ok(*n),
        other => Err(bad_answer(format!(
            "{other:?} where an integer was expected"
        ))),
    }
}

pub(super) fn uint(v: &Value) -> Result<u64, StoreError> {
    u64::try_from(int(v)?).map_err(bad_answer)
}

fn small<T: TryFrom<i64>>(v: &Value) -> Result<T, StoreError> {
    T::try_from(int(v)?).map_err(|_| bad_answer("an integer out of range"))
}

pub(super) fn array(v: Value) -> Result<Vec<Value>, StoreError> {
    match v {
        Value::Array(items) => Ok(items),
        other => Err(bad_answer(format!("{other:?} where an array was expected"))),
    }
}

fn bytes(v: &Value) -> Result<Bytes, StoreError> {
    match v {
        Value::Bulk(b) => Ok(b.clone()),
        Value::Simple(s) => Ok(Bytes::from(s.clone())),
        other => Err(bad_answer(format!("{other:?} where text was expected"))),
    }
}

fn text(v: &Value) -> Result<String, StoreError> {
    String::from_utf8(bytes(v)?.to_vec()).map_err(bad_answer)
}

fn ms(v: &Value) -> Result<Duration, StoreError> {
    uint(v).map(Duration::from_millis)
}

fn time(v: &Value) -> Result<Timestamp, StoreError> {
    int(v).map(Timestamp::from_millis)
}

/// `null` or `f(value)`.
fn opt<T>(
    v: &Value,
    f: impl FnOnce(&Value) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    match v {
        Value::Null => Ok(None),
        v => f(v).map(Some),
    }
}

/// A map answer, looked up by field name.
pub(super) struct Fields(Vec<(Value, Value)>);

impl Fields {
    pub(super) fn new(v: Value) -> Result<Fields, StoreError> {
        match v {
            Value::Map(pairs) => Ok(Fields(pairs)),
            other => Err(bad_answer(format!("{other:?} where a map was expected"))),
        }
    }

    pub(super) fn get(&self, name: &str) -> Result<&Value, StoreError> {
        self.find(name)
            .ok_or_else(|| bad_answer(format!("no field {name}")))
    }

    /// A field that servers older than it do not send.
    fn find(&self, name: &str) -> Option<&Value> {
        self.0
            .iter()
            .find(|(k, _)| matches!(k, Value::Bulk(b) if b.as_ref() == name.as_bytes()))
            .map(|(_, v)| v)
    }

    /// A field that may be null, or absent (servers older than it do not
    /// send it): both read as `None`.
    fn optional<T>(
        &self,
        name: &str,
        read: impl FnOnce(&Value) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        self.find(name)
            .map(|v| opt(v, read))
            .transpose()
            .map(Option::flatten)
    }
}

fn payload(f: &Fields) -> Result<Payload, StoreError> {
    let b = bytes(f.get("payload")?)?;
    match text(f.get("format")?)?.as_str() {
        "json" => Ok(Payload::json(b)),
        "binary" => Ok(Payload::binary(b)),
        other => Err(bad_answer(format!("payload format {other}"))),
    }
}

fn name<T>(
    v: &Value,
    make: impl FnOnce(String) -> Result<T, spool_core::NameError>,
) -> Result<T, StoreError> {
    make(text(v)?).map_err(bad_answer)
}

/// A task map; `known_token` fills in a lease whose token the answer does
/// not show (zero when unknown, as over HTTP).
pub(super) fn task(v: Value, known_token: Option<LeaseToken>) -> Result<Task, StoreError> {
    let f = Fields::new(v)?;
    let shown = match f.get("token") {
        Ok(t) => opt(t, |t| text(t)?.parse::<LeaseToken>().map_err(bad_answer))?,
        Err(_) => None,
    };
    let lease = match opt(f.get("lease_owner")?, text)? {
        Some(owner) => Some(Lease {
            owner,
            token: shown.or(known_token).unwrap_or(LeaseToken(0)),
            expires_at: time(f.get("lease_expires_at")?)?,
        }),
        None => None,
    };
    let errors = array(f.get("errors")?.clone())?
        .into_iter()
        .map(|e| {
            let e = Fields::new(e)?;
            Ok(ErrorRecord {
                attempt: small(e.get("attempt")?)?,
                at: time(e.get("at")?)?,
                message: text(e.get("message")?)?,
            })
        })
        .collect::<Result<_, StoreError>>()?;
    Ok(Task {
        id: TaskId(uint(f.get("id")?)?),
        queue: name(f.get("queue")?, QueueName::new)?,
        kind: name(f.get("kind")?, Kind::new)?,
        payload: payload(&f)?,
        priority: small(f.get("priority")?)?,
        run_at: time(f.get("run_at")?)?,
        key: opt(f.get("key")?, |k| name(k, TaskKey::new))?,
        attempt: small(f.get("attempt")?)?,
        max_attempts: small(f.get("max_attempts")?)?,
        lease_ms: opt(f.get("lease_ms")?, uint)?,
        state: text(f.get("state")?)?
            .parse::<TaskState>()
            .map_err(bad_answer)?,
        lease,
        errors,
        created_at: time(f.get("created_at")?)?,
        updated_at: time(f.get("updated_at")?)?,
        traceparent: f.optional("traceparent", text)?,
        group: f.optional("group", |g| name(g, TaskGroup::new))?,
        deps: deps(&f)?,
    })
}

/// A task's dependencies: fields only a task that has some carries.
fn deps(f: &Fields) -> Result<Option<Box<Dependencies>>, StoreError> {
    let Some(after) = f.optional("after", ids)? else {
        return Ok(None);
    };
    let json = DepsJson {
        after,
        waiting_on: ids(f.get("waiting_on")?)?,
        parents_failed: small(f.get("parents_failed")?)?,
        parents_completed: small(f.get("parents_completed")?)?,
        if_parent_fails: text(f.get("if_parent_fails")?)?
            .parse::<ParentFailure>()
            .map_err(bad_answer)?,
        parent_results: f
            .optional("parent_results", parent_results)?
            .unwrap_or_default(),
    };
    Ok(Some(Box::new(
        Dependencies::try_from(json).map_err(bad_answer)?,
    )))
}

/// `[[id, json], ...]`: each parent's result, its JSON as text.
fn parent_results(v: &Value) -> Result<Vec<ParentResultJson>, StoreError> {
    array(v.clone())?
        .into_iter()
        .map(|pair| match array(pair)?.as_slice() {
            [id, json] => Ok(ParentResultJson {
                id: uint(id)?,
                result: serde_json::from_str(&text(json)?).map_err(bad_answer)?,
            }),
            _ => Err(bad_answer("a parent result is not an [id, json] pair")),
        })
        .collect()
}

fn ids(v: &Value) -> Result<Vec<u64>, StoreError> {
    array(v.clone())?.iter().map(uint).collect()
}

/// `ENQUEUE`'s RESP3 answer: `{id, duplicate}`.
pub(super) fn enqueued(v: Value) -> Result<EnqueueOutcome, StoreError> {
    let f = Fields::new(v)?;
    Ok(EnqueueOutcome {
        id: TaskId(uint(f.get("id")?)?),
        duplicate: matches!(f.get("duplicate")?, Value::Bool(true)),
    })
}

fn counts(f: &Fields) -> Result<StateCounts, StoreError> {
    Ok(StateCounts {
        scheduled: uint(f.get("scheduled")?)?,
        ready: uint(f.get("ready")?)?,
        leased: uint(f.get("leased")?)?,
        dead: uint(f.get("dead")?)?,
        // Absent from servers older than dependencies: none then.
        pending: f.optional("pending", uint)?.unwrap_or(0),
    })
}

pub(super) fn queue_stats(v: Value) -> Result<QueueStats, StoreError> {
    let f = Fields::new(v)?;
    let mut kinds = spool_core::KindCounts::new();
    for k in array(f.get("kinds")?.clone())? {
        let k = Fields::new(k)?;
        kinds.insert(name(k.get("kind")?, Kind::new)?, counts(&k)?);
    }
    Ok(QueueStats {
        name: name(f.get("name")?, QueueName::new)?,
        paused: matches!(f.get("paused")?, Value::Bool(true)),
        counts: counts(&f)?,
        kinds,
        oldest_ready_age: opt(f.get("oldest_ready_ms")?, ms)?,
        // Absent from servers that predate it.
        rate_tokens: f.optional("rate_tokens", small)?,
    })
}

pub(super) fn settings(v: Value) -> Result<QueueSettings, StoreError> {
    let f = Fields::new(v)?;
    Ok(QueueSettings {
        lease: ms(f.get("lease_ms")?)?,
        max_attempts: small(f.get("max_attempts")?)?,
        backoff_base: ms(f.get("backoff_base_ms")?)?,
        backoff_max: ms(f.get("backoff_max_ms")?)?,
        dedup_window: ms(f.get("dedup_window_ms")?)?,
        max_payload: uint(f.get("max_payload")?)?,
        paused: matches!(f.get("paused")?, Value::Bool(true)),
        rate_limit: f.optional("rate_limit", rate_limit)?,
        max_leased: f.optional("max_leased", small)?,
        group_concurrency: f.optional("group_concurrency", small)?,
        group_rate_limit: f.optional("group_rate_limit", rate_limit)?,
    })
}

/// One group of `GROUPS`: `{group, waiting, leased, rate_tokens}`.
pub(super) fn group_stats(v: Value) -> Result<GroupStats, StoreError> {
    let f = Fields::new(v)?;
    Ok(GroupStats {
        group: name(f.get("group")?, TaskGroup::new)?,
        waiting: uint(f.get("waiting")?)?,
        leased: uint(f.get("leased")?)?,
        rate_tokens: f.optional("rate_tokens", small)?,
    })
}

/// `[limit, period_ms, burst]`.
fn rate_limit(v: &Value) -> Result<RateLimit, StoreError> {
    match array(v.clone())?.as_slice() {
        [limit, period, burst] => Ok(RateLimit {
            limit: small(limit)?,
            period: ms(period)?,
            burst: small(burst)?,
        }),
        other => Err(bad_answer(format!("a rate limit of {} items", other.len()))),
    }
}

pub(super) fn schedule(v: Value) -> Result<Schedule, StoreError> {
    let f = Fields::new(v)?;
    let cadence = match (opt(f.get("every_ms")?, ms)?, opt(f.get("cron")?, text)?) {
        (Some(d), None) => Cadence::Every(d),
        (None, Some(expr)) => Cadence::Cron {
            expr,
            tz: opt(f.get("tz")?, text)?,
        },
        _ => return Err(bad_answer("a schedule needs exactly one of every_ms, cron")),
    };
    Ok(Schedule {
        spec: ScheduleSpec {
            name: name(f.get("name")?, Kind::new)?,
            queue: name(f.get("queue")?, QueueName::new)?,
            kind: opt(f.get("kind")?, |k| name(k, Kind::new))?,
            payload: payload(&f)?,
            cadence,
            deadline: opt(f.get("deadline_ms")?, ms)?,
        },
        last_fire_at: opt(f.get("last_fire_at")?, time)?,
        created_at: time(f.get("created_at")?)?,
    })
}

/// `TIME`: seconds and microseconds, as Redis answers it.
pub(super) fn now(v: Value) -> Result<Timestamp, StoreError> {
    let parts = array(v)?;
    let [secs, micros] = parts.as_slice() else {
        return Err(bad_answer("TIME answers two numbers"));
    };
    let number = |v: &Value| -> Result<i64, StoreError> { text(v)?.parse().map_err(bad_answer) };
    Ok(Timestamp::from_millis(
        number(secs)? * 1000 + number(micros)? / 1000,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }

    fn map(fields: Vec<(&str, Value)>) -> Value {
        Value::Map(fields.into_iter().map(|(k, v)| (bulk(k), v)).collect())
    }

    /// A task map as `GET` answers it, with `extra` fields.
    fn task_map(extra: Vec<(&'static str, Value)>) -> Value {
        let mut fields = vec![
            ("id", Value::Int(7)),
            ("queue", bulk("q")),
            ("kind", bulk("q")),
            ("payload", bulk("null")),
            ("format", Value::Simple("json".into())),
            ("priority", Value::Int(0)),
            ("run_at", Value::Int(1_795_305_540_123)),
            ("key", Value::Null),
            ("attempt", Value::Int(0)),
            ("max_attempts", Value::Int(20)),
            ("lease_ms", Value::Null),
            ("state", Value::Simple("ready".into())),
            ("lease_owner", Value::Null),
            ("lease_expires_at", Value::Null),
            ("errors", Value::Array(Vec::new())),
            ("created_at", Value::Int(1_795_305_540_123)),
            ("updated_at", Value::Int(1_795_305_540_123)),
        ];
        fields.extend(extra);
        map(fields)
    }

    #[test]
    fn a_tasks_group_is_read_and_null_or_absent_means_none() {
        let t = task(task_map(vec![("group", bulk("customer 42 ü"))]), None).unwrap();
        assert_eq!(t.group.unwrap().as_str(), "customer 42 ü");
        let null = task(task_map(vec![("group", Value::Null)]), None).unwrap();
        assert_eq!(null.group, None);
        assert_eq!(task(task_map(Vec::new()), None).unwrap().group, None);
        assert!(matches!(
            task(task_map(vec![("group", bulk(""))]), None),
            Err(StoreError::Internal(_))
        ));
    }

    fn settings_map(extra: Vec<(&'static str, Value)>) -> Value {
        let mut fields = vec![
            ("lease_ms", Value::Int(30_000)),
            ("max_attempts", Value::Int(20)),
            ("backoff_base_ms", Value::Int(1_000)),
            ("backoff_max_ms", Value::Int(3_600_000)),
            ("dedup_window_ms", Value::Int(900_000)),
            ("max_payload", Value::Int(1_048_576)),
            ("paused", Value::Bool(false)),
        ];
        fields.extend(extra);
        map(fields)
    }

    #[test]
    fn settings_carry_group_concurrency_absent_from_older_servers() {
        let s = settings(settings_map(vec![("group_concurrency", Value::Int(4))])).unwrap();
        assert_eq!(s.group_concurrency, Some(4));
        let none = settings(settings_map(vec![("group_concurrency", Value::Null)])).unwrap();
        assert_eq!(none.group_concurrency, None);
        assert_eq!(
            settings(settings_map(Vec::new()))
                .unwrap()
                .group_concurrency,
            None
        );
        assert!(settings(settings_map(vec![("group_concurrency", Value::Int(-1))])).is_err());
    }

    #[test]
    fn a_group_is_read_from_its_map() {
        let g = group_stats(map(vec![
            ("group", bulk("acme")),
            ("waiting", Value::Int(3)),
            ("leased", Value::Int(1)),
        ]))
        .unwrap();
        assert_eq!((g.group.as_str(), g.waiting, g.leased), ("acme", 3, 1));
        assert!(group_stats(map(vec![("group", bulk("acme"))])).is_err());
    }
}
