//! JSON shapes that the server writes and the client reads, or the other
//! way round (docs/spec.md §7.1), defined once so the two cannot drift, and
//! the conversion of durations to the `*_ms` integers they carry.
//!
//! Only shapes and lossless conversions live here; checks on what a client
//! sends (bounds, coherence) stay with the server and the stores. With the
//! `openapi` feature each shape is also an OpenAPI schema, named after its
//! type, for the server's document.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::limits::RateLimit;
use crate::settings::{QueueChange, QueueSettings};
use crate::time::duration_millis;

mod counts;
mod deps;

pub use counts::CountsJson;
pub use deps::{DepsJson, ParentResultJson};

/// Whole milliseconds of a duration, for a `*_ms` field.
pub fn ms(d: Duration) -> u64 {
    duration_millis(d).unsigned_abs()
}

/// A queue's rate limit (docs/spec.md §4): at most `limit` tasks handed
/// out per `period_ms`, in bursts of at most `burst`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RateLimitJson {
    /// Tasks per period, at least 1.
    pub limit: u32,
    /// The period, at least 1 ms.
    pub period_ms: u64,
    /// The most tasks handed out at once after a quiet spell, at least 1.
    pub burst: u32,
}

impl From<&RateLimit> for RateLimitJson {
    fn from(r: &RateLimit) -> Self {
        RateLimitJson {
            limit: r.limit,
            period_ms: ms(r.period),
            burst: r.burst,
        }
    }
}

impl From<RateLimitJson> for RateLimit {
    fn from(r: RateLimitJson) -> Self {
        RateLimit {
            limit: r.limit,
            period: Duration::from_millis(r.period_ms),
            burst: r.burst,
        }
    }
}

/// A field that tells absent (`None`: keep) from `null` (`Some(None)`:
/// remove) from a value.
fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A queue's settings (docs/spec.md §4).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SettingsJson {
    /// The lease of claims that ask for none, for tasks without their own.
    pub lease_ms: u64,
    /// Attempts before a task goes dead; copied into each task at enqueue
    /// unless it sets its own.
    pub max_attempts: u32,
    /// The retry delay after a first failure; it doubles with each further one.
    pub backoff_base_ms: u64,
    /// The cap on a retry delay, before a jitter of up to a tenth.
    pub backoff_max_ms: u64,
    /// How long a completed or cancelled task's key still deduplicates.
    pub dedup_window_ms: u64,
    /// Largest payload accepted, in bytes.
    pub max_payload: u64,
    /// A paused queue hands out nothing; enqueues, acks and the rest still work.
    pub paused: bool,
    /// Tasks handed out per period, enforced at claim; absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimitJson>,
    /// Tasks leased at once, across every worker; absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_leased: Option<u32>,
    /// Tasks of one group leased at once, across every worker; absent: no
    /// limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_concurrency: Option<u32>,
    /// Tasks of one group handed out per period, each group with a bucket
    /// of its own, enforced at claim; absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_rate_limit: Option<RateLimitJson>,
}

impl From<&QueueSettings> for SettingsJson {
    fn from(s: &QueueSettings) -> Self {
        SettingsJson {
            lease_ms: ms(s.lease),
            max_attempts: s.max_attempts,
            backoff_base_ms: ms(s.backoff_base),
            backoff_max_ms: ms(s.backoff_max),
            dedup_window_ms: ms(s.dedup_window),
            max_payload: s.max_payload,
            paused: s.paused,
            rate_limit: s.rate_limit.as_ref().map(RateLimitJson::from),
            max_leased: s.max_leased,
            group_concurrency: s.group_concurrency,
            group_rate_limit: s.group_rate_limit.as_ref().map(RateLimitJson::from),
        }
    }
}

impl From<SettingsJson> for QueueSettings {
    fn from(s: SettingsJson) -> Self {
        QueueSettings {
            lease: Duration::from_millis(s.lease_ms),
            max_attempts: s.max_attempts,
            backoff_base: Duration::from_millis(s.backoff_base_ms),
            backoff_max: Duration::from_millis(s.backoff_max_ms),
            dedup_window: Duration::from_millis(s.dedup_window_ms),
            max_payload: s.max_payload,
            paused: s.paused,
            rate_limit: s.rate_limit.map(RateLimit::from),
            max_leased: s.max_leased,
            group_concurrency: s.group_concurrency,
            group_rate_limit: s.group_rate_limit.map(RateLimit::from),
        }
    }
}

/// New settings. Absent fields keep the queue's current values, or the
/// defaults when the queue does not exist yet.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SettingsBody {
    /// The lease of claims that ask for none; at least 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_ms: Option<u64>,
    /// At least 1; tasks already enqueued keep theirs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// The retry delay after a first failure; at most the resulting
    /// `backoff_max_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_base_ms: Option<u64>,
    /// The cap on a retry delay, before a jitter of up to a tenth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_max_ms: Option<u64>,
    /// How long a completed or cancelled task's key still deduplicates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedup_window_ms: Option<u64>,
    /// Bytes, at most 67108864 (64 MiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_payload: Option<u64>,
    /// Pauses (`true`) or resumes (`false`) the queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// A new rate limit; `null` removes the queue's.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<RateLimitJson>, nullable))]
    pub rate_limit: Option<Option<RateLimitJson>>,
    /// A new limit on tasks leased at once, at least 1; `null` removes it.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u32>, nullable))]
    pub max_leased: Option<Option<u32>>,
    /// A new limit on tasks of one group leased at once, at least 1;
    /// `null` removes it.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u32>, nullable))]
    pub group_concurrency: Option<Option<u32>>,
    /// A new rate limit for each group (a bucket per group); `null`
    /// removes it.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<RateLimitJson>, nullable))]
    pub group_rate_limit: Option<Option<RateLimitJson>>,
}

impl From<QueueChange> for SettingsBody {
    fn from(c: QueueChange) -> Self {
        SettingsBody {
            lease_ms: c.lease.map(ms),
            max_attempts: c.max_attempts,
            backoff_base_ms: c.backoff_base.map(ms),
            backoff_max_ms: c.backoff_max.map(ms),
            dedup_window_ms: c.dedup_window.map(ms),
            max_payload: c.max_payload,
            paused: c.paused,
            rate_limit: c.rate_limit.map(|r| r.as_ref().map(RateLimitJson::from)),
            max_leased: c.max_leased,
            group_concurrency: c.group_concurrency,
            group_rate_limit: c
                .group_rate_limit
                .map(|r| r.as_ref().map(RateLimitJson::from)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_through_json() {
        let s = QueueSettings {
            lease: Duration::from_millis(1234),
            paused: true,
            ..QueueSettings::default()
        };
        assert_eq!(QueueSettings::from(SettingsJson::from(&s)), s);
    }

    #[test]
    fn a_change_sends_only_its_fields() -> Result<(), serde_json::Error> {
        let change = QueueChange {
            lease: Some(Duration::from_secs(2)),
            paused: Some(false),
            ..QueueChange::default()
        };
        let body = serde_json::to_string(&SettingsBody::from(change))?;
        assert_eq!(body, r#"{"lease_ms":2000,"paused":false}"#);
        Ok(())
    }

    #[test]
    fn limits_round_trip_and_null_removes_them() -> Result<(), serde_json::Error> {
        let s = QueueSettings {
            rate_limit: Some(RateLimit {
                limit: 100,
                period: Duration::from_secs(1),
                burst: 10,
            }),
            max_leased: Some(5),
            group_rate_limit: Some(RateLimit {
                limit: 2,
                period: Duration::from_millis(500),
                burst: 1,
            }),
            ..QueueSettings::default()
        };
        assert_eq!(QueueSettings::from(SettingsJson::from(&s)), s);
        let body: SettingsBody = serde_json::from_str(r#"{"rate_limit":null,"max_leased":3}"#)?;
        assert_eq!(body.rate_limit, Some(None));
        assert_eq!(body.max_leased, Some(Some(3)));
        let body: SettingsBody = serde_json::from_str("{}")?;
        assert_eq!((body.rate_limit, body.max_leased), (None, None));
        let clear = QueueChange {
            max_leased: Some(None),
            ..QueueChange::default()
        };
        let text = serde_json::to_string(&SettingsBody::from(clear))?;
        assert_eq!(text, r#"{"max_leased":null}"#);
        Ok(())
    }

    #[test]
    fn durations_beyond_the_range_saturate() {
        assert_eq!(ms(Duration::MAX), i64::MAX as u64);
        assert_eq!(ms(Duration::from_micros(1999)), 1);
    }
}
