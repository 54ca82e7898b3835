//! The commands that look after queues rather than run tasks: `LIST`,
//! `QUEUE GET|SET`, `GROUPS`, `TIME` and `SCHEDULE SET|LIST|DEL|FIRE`,
//! parsed and run.
//! With the task commands they cover every operation of the `Store` trait,
//! so a client needs no HTTP beside RESP.
//!
//! Invariants: `QUEUE SET` changes only the settings it names and, like
//! `PUT /v1/queues/{queue}`, hands the store just those, which it applies
//! atomically, so a concurrent `PAUSE` through any node is not lost. Every
//! value is checked here as a wire value before the store sees it; the
//! settings a change makes are checked as a whole by the store.

use std::time::Duration;

use spool_core::groups::validate_limit;
use spool_core::store::MAX_LIST_LIMIT;
use spool_core::{
    Cadence, Kind, ListOrder, ListRequest, QueueChange, QueueName, RateLimit, ScheduleSpec,
    StoreError, TaskState, Timestamp,
};

use super::args::{payload_as, Args};
use super::reply::{Proto, Reply};
use super::shape;
use crate::api::groups::DEFAULT_LIMIT as DEFAULT_GROUPS;
use crate::error::ApiError;
use crate::state::AppState;
use crate::wire;

/// One of this module's commands, parsed.
#[derive(Debug)]
pub(super) enum Manage {
    List(ListRequest),
    QueueGet(QueueName),
    QueueSet(QueueName, QueueChange),
    /// `GROUPS queue [LIMIT n]`: the queue's busiest groups.
    Groups(QueueName, usize),
    Time,
    SchedulePut(Box<ScheduleSpec>),
    ScheduleList,
    ScheduleDel(Kind),
    ScheduleFire(Kind, Timestamp),
}

/// Parses the command `name` (in capitals) from `a`.
pub(super) fn parse(name: &str, a: &mut Args<'_>) -> Result<Manage, StoreError> {
    match name {
        "LIST" => list(a),
        "GROUPS" => groups(a),
        "TIME" => Ok(Manage::Time),
        "QUEUE" => {
            let sub = a.bytes()?.to_ascii_uppercase();
            match sub.as_slice() {
                b"GET" => Ok(Manage::QueueGet(a.queue()?)),
                b"SET" => queue_set(a),
                _ => Err(StoreError::bad_request("QUEUE takes GET or SET")),
            }
        }
        _ => {
            let sub = a.bytes()?.to_ascii_uppercase();
            match sub.as_slice() {
                b"SET" => schedule_set(a),
                b"LIST" => Ok(Manage::ScheduleList),
                b"DEL" => Ok(Manage::ScheduleDel(Kind::new(a.string("name")?)?)),
                b"FIRE" => Ok(Manage::ScheduleFire(
                    Kind::new(a.string("name")?)?,
                    a.unix_ms("tick")?,
                )),
                _ => Err(StoreError::bad_request(
                    "SCHEDULE takes SET, LIST, DEL or FIRE",
                )),
            }
        }
    }
}

/// `LIST queue [STATE s] [ORDER id|attempts] [LIMIT n] [CURSOR c]`.
fn list(a: &mut Args<'_>) -> Result<Manage, StoreError> {
    let mut req = ListRequest::new(a.queue()?);
    while let Some(opt) = a.optional() {
        match opt.to_ascii_uppercase().as_slice() {
            b"STATE" => {
                req.state = Some(
                    a.string("STATE")?
                        .parse::<TaskState>()
                        .map_err(StoreError::BadRequest)?,
                )
            }
            b"ORDER" => {
                req.order = match a.bytes()?.to_ascii_uppercase().as_slice() {
                    b"ID" => ListOrder::Id,
                    b"ATTEMPTS" => ListOrder::AttemptsDesc,
                    _ => return Err(StoreError::bad_request("ORDER is id or attempts")),
                }
            }
            b"LIMIT" => {
                req.limit = usize::try_from(a.number("LIMIT")?)
                    .ok()
                    .filter(|n| (1..=MAX_LIST_LIMIT).contains(n))
                    .ok_or_else(|| {
                        StoreError::bad_request(format!(
                            "limit must be between 1 and {MAX_LIST_LIMIT}"
                        ))
                    })?
            }
            b"CURSOR" => req.cursor = Some(a.string("CURSOR")?),
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    Ok(Manage::List(req))
}

/// `GROUPS queue [LIMIT n]`: the checks of `GET /v1/queues/{queue}/groups`.
fn groups(a: &mut Args<'_>) -> Result<Manage, StoreError> {
    let queue = a.queue()?;
    let mut limit = DEFAULT_GROUPS;
    if let Some(opt) = a.optional() {
        a.expect_option(&opt, "LIMIT")?;
        limit = usize::try_from(a.number("LIMIT")?).unwrap_or(usize::MAX);
    }
    validate_limit(limit)?;
    Ok(Manage::Groups(queue, limit))
}

/// A count that must fit a `u32`.
fn count32(a: &mut Args<'_>, what: &str) -> Result<u32, StoreError> {
    u32::try_from(a.number(what)?)
        .map_err(|_| StoreError::bad_request(format!("{what} is too large")))
}

/// `n` or `OFF`: a limit that fits a `u32`, or none.
fn limit_or_off(a: &mut Args<'_>, what: &str) -> Result<Option<u32>, StoreError> {
    if a.off() {
        return Ok(None);
    }
    count32(a, what).map(Some)
}

/// `RATELIMIT limit period_ms burst`, or `RATELIMIT OFF` (and the same
/// for `GROUPRATELIMIT`): `option` names it, `field` is the setting's.
fn rate_limit(
    a: &mut Args<'_>,
    option: &str,
    field: &str,
) -> Result<Option<RateLimit>, StoreError> {
    if a.off() {
        return Ok(None);
    }
    Ok(Some(RateLimit {
        limit: count32(a, &format!("{option} limit"))?,
        period: wire::duration_ms(
            &format!("{field}.period_ms"),
            a.number(&format!("{option} period_ms"))?,
        )?,
        burst: count32(a, &format!("{option} burst"))?,
    }))
}

/// `QUEUE SET queue [LEASE ms] [MAXATTEMPTS n] [BACKOFFBASE ms]
/// [BACKOFFMAX ms] [DEDUPWINDOW ms] [MAXPAYLOAD bytes] [PAUSED 0|1]
/// [RATELIMIT limit period_ms burst | RATELIMIT OFF] [MAXLEASED n | OFF]
/// [GROUPCONCURRENCY n | OFF]
/// [GROUPRATELIMIT limit period_ms burst | GROUPRATELIMIT OFF]`.
fn queue_set(a: &mut Args<'_>) -> Result<Manage, StoreError> {
    let queue = a.queue()?;
    let mut change = QueueChange::default();
    while let Some(opt) = a.optional() {
        match opt.to_ascii_uppercase().as_slice() {
            b"LEASE" => change.lease = Some(wire::duration_ms("lease_ms", a.number("LEASE")?)?),
            b"MAXATTEMPTS" => {
                change.max_attempts = Some(
                    u32::try_from(a.number("MAXATTEMPTS")?)
                        .map_err(|_| StoreError::bad_request("max_attempts is too large"))?,
                )
            }
            b"BACKOFFBASE" => {
                change.backoff_base = Some(wire::duration_ms(
                    "backoff_base_ms",
                    a.number("BACKOFFBASE")?,
                )?)
            }
            b"BACKOFFMAX" => {
                change.backoff_max = Some(wire::duration_ms(
                    "backoff_max_ms",
                    a.number("BACKOFFMAX")?,
                )?)
            }
            b"DEDUPWINDOW" => {
                change.dedup_window = Some(wire::duration_ms(
                    "dedup_window_ms",
                    a.number("DEDUPWINDOW")?,
                )?)
            }
            b"MAXPAYLOAD" => change.max_payload = Some(a.number("MAXPAYLOAD")?),
            b"RATELIMIT" => change.rate_limit = Some(rate_limit(a, "RATELIMIT", "rate_limit")?),
            b"GROUPRATELIMIT" => {
                change.group_rate_limit = Some(rate_limit(a, "GROUPRATELIMIT", "group_rate_limit")?)
            }
            b"MAXLEASED" => change.max_leased = Some(limit_or_off(a, "MAXLEASED")?),
            b"GROUPCONCURRENCY" => {
                change.group_concurrency = Some(limit_or_off(a, "GROUPCONCURRENCY")?)
            }
            b"PAUSED" => {
                change.paused = Some(match a.bytes()?.as_ref() {
                    b"0" => false,
                    b"1" => true,
                    _ => return Err(StoreError::bad_request("PAUSED is 0 or 1")),
                })
            }
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    Ok(Manage::QueueSet(queue, change))
}

/// `SCHEDULE SET name queue payload EVERY ms | CRON expr [TZ zone]
/// [KIND kind] [DEADLINE ms] [BINARY]`.
fn schedule_set(a: &mut Args<'_>) -> Result<Manage, StoreError> {
    let name = Kind::new(a.string("name")?)?;
    let queue = a.queue()?;
    let raw = a.bytes()?;
    let (mut every, mut cron, mut tz, mut kind, mut deadline, mut binary) =
        (None, None, None, None, None, false);
    while let Some(opt) = a.optional() {
        match opt.to_ascii_uppercase().as_slice() {
            b"EVERY" => every = Some(Duration::from_millis(a.number("EVERY")?)),
            b"CRON" => cron = Some(a.string("CRON")?),
            b"TZ" => tz = Some(a.string("TZ")?),
            b"KIND" => kind = Some(Kind::new(a.string("KIND")?)?),
            b"DEADLINE" => {
                deadline = Some(wire::non_zero_ms("deadline_ms", a.number("DEADLINE")?)?)
            }
            b"BINARY" => binary = true,
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    let cadence = match (every, cron, tz) {
        (Some(d), None, None) => Cadence::Every(d),
        (None, Some(expr), tz) => Cadence::Cron { expr, tz },
        _ => {
            return Err(StoreError::bad_request(
                "give EVERY ms, or CRON expr with an optional TZ",
            ))
        }
    };
    let spec = ScheduleSpec {
        name,
        queue,
        kind,
        payload: payload_as(raw, binary),
        cadence,
        deadline,
    };
    spec.validate()?;
    Ok(Manage::SchedulePut(Box::new(spec)))
}

/// Runs `m` against the store.
pub(super) async fn run(st: &AppState, proto: Proto, m: Manage) -> Result<Reply, ApiError> {
    Ok(match m {
        Manage::List(req) => {
            let page = st.call(st.store().list(req)).await?;
            Reply::Map(vec![
                (
                    "tasks",
                    Reply::Array(page.tasks.iter().map(|t| shape::task(t, false)).collect()),
                ),
                (
                    "next_cursor",
                    page.next_cursor.map_or(Reply::Null, Reply::text),
                ),
            ])
        }
        Manage::QueueGet(queue) => shape::settings(&st.call(st.store().get_queue(&queue)).await?),
        Manage::QueueSet(queue, change) => {
            shape::settings(&st.call(st.store().put_queue(&queue, change)).await?)
        }
        Manage::Groups(queue, limit) => Reply::Array(
            st.call(st.store().groups(&queue, limit))
                .await?
                .iter()
                .map(shape::group_stats)
                .collect(),
        ),
        Manage::Time => {
            // Redis's shape: seconds and microseconds, as bulk strings.
            let ms = st.call(st.store().now()).await?.as_millis();
            Reply::Array(vec![
                Reply::text(ms.div_euclid(1000).to_string()),
                Reply::text((ms.rem_euclid(1000) * 1000).to_string()),
            ])
        }
        Manage::SchedulePut(spec) => {
            shape::schedule(&st.call(st.store().put_schedule(*spec)).await?)
        }
        Manage::ScheduleList => Reply::Array(
            st.call(st.store().list_schedules())
                .await?
                .iter()
                .map(shape::schedule)
                .collect(),
        ),
        Manage::ScheduleDel(name) => {
            st.call(st.store().delete_schedule(&name)).await?;
            Reply::OK
        }
        Manage::ScheduleFire(name, tick) => st
            .call(st.store().fire_schedule(&name, tick))
            .await?
            .map_or(Reply::Null, |o| shape::enqueued(o, proto)),
    })
}
