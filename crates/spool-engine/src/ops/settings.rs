//! How a schedule's spec and a queue's settings are laid out, in log
//! records and in checkpoints. Fields added later are flagged, so records
//! written before they existed read as they always did.

use std::time::Duration;

use spool_core::{Cadence, Kind, QueueName, QueueSettings, RateLimit, ScheduleSpec};

use crate::codec::{self, DecodeError, Reader};

use super::fields::{
    put_opt_u64, put_payload, read_name, read_opt_name, read_opt_u64, read_payload,
};

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
/// once (u32) when bit 3 is, then a rate limit for each group (laid out as
/// the queue's) when bit 4 is. Spool wrote only 0 and 1 there before queues
/// had limits, and each limit's bit was unset before it existed, so those
/// records read as they always did, and settings without limits are still
/// written byte for byte as before.
const SETTINGS_PAUSED: u8 = 1;
const SETTINGS_RATE_LIMIT: u8 = 2;
const SETTINGS_MAX_LEASED: u8 = 4;
const SETTINGS_GROUP_CONCURRENCY: u8 = 8;
const SETTINGS_GROUP_RATE_LIMIT: u8 = 16;

pub(crate) fn put_settings(buf: &mut Vec<u8>, s: &QueueSettings) {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    codec::put_u64(buf, ms(s.lease));
    codec::put_u32(buf, s.max_attempts);
    codec::put_u64(buf, ms(s.backoff_base));
    codec::put_u64(buf, ms(s.backoff_max));
    codec::put_u64(buf, ms(s.dedup_window));
    codec::put_u64(buf, s.max_payload);
    let flag = |set: bool, bit: u8| if set { bit } else { 0 };
    codec::put_u8(
        buf,
        u8::from(s.paused)
            | flag(s.rate_limit.is_some(), SETTINGS_RATE_LIMIT)
            | flag(s.max_leased.is_some(), SETTINGS_MAX_LEASED)
            | flag(s.group_concurrency.is_some(), SETTINGS_GROUP_CONCURRENCY)
            | flag(s.group_rate_limit.is_some(), SETTINGS_GROUP_RATE_LIMIT),
    );
    let put_rate = |buf: &mut Vec<u8>, r: &RateLimit| {
        codec::put_u32(buf, r.limit);
        codec::put_u64(buf, ms(r.period));
        codec::put_u32(buf, r.burst);
    };
    if let Some(r) = &s.rate_limit {
        put_rate(buf, r);
    }
    if let Some(n) = s.max_leased {
        codec::put_u32(buf, n);
    }
    if let Some(n) = s.group_concurrency {
        codec::put_u32(buf, n);
    }
    if let Some(r) = &s.group_rate_limit {
        put_rate(buf, r);
    }
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
    let known = SETTINGS_PAUSED
        | SETTINGS_RATE_LIMIT
        | SETTINGS_MAX_LEASED
        | SETTINGS_GROUP_CONCURRENCY
        | SETTINGS_GROUP_RATE_LIMIT;
    if flags & !known != 0 {
        return Err(DecodeError { what: "paused", at });
    }
    let read_rate = |r: &mut Reader<'_>| -> Result<RateLimit, DecodeError> {
        Ok(RateLimit {
            limit: r.u32("rate limit")?,
            period: ms(r.u64("rate period")?),
            burst: r.u32("rate burst")?,
        })
    };
    let paused = flags & SETTINGS_PAUSED != 0;
    let rate_limit = match flags & SETTINGS_RATE_LIMIT {
        0 => None,
        _ => Some(read_rate(r)?),
    };
    let max_leased = match flags & SETTINGS_MAX_LEASED {
        0 => None,
        _ => Some(r.u32("max_leased")?),
    };
    let group_concurrency = match flags & SETTINGS_GROUP_CONCURRENCY {
        0 => None,
        _ => Some(r.u32("group_concurrency")?),
    };
    let group_rate_limit = match flags & SETTINGS_GROUP_RATE_LIMIT {
        0 => None,
        _ => Some(read_rate(r)?),
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
        group_rate_limit,
    })
}
