//! Per-queue settings (docs/spec.md §4), their limits, and the one set of
//! checks every store and the server apply to them.
//!
//! A change names only the fields it changes ([`QueueChange`]); the result
//! of applying one is always checked as a whole, since a field may be fine
//! alone and wrong beside the queue's others (a `backoff_base` over the
//! queue's `backoff_max`).

use std::time::Duration;

use crate::error::StoreError;
use crate::limits::RateLimit;

/// The largest `max_payload` a queue may set: 64 MiB.
pub const MAX_PAYLOAD_LIMIT: u64 = 64 * 1024 * 1024;

/// A queue's settings. Changing them never loses tasks.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct QueueSettings {
    /// Lease given to claims that do not ask for one.
    pub lease: Duration,
    /// Attempts before a task goes dead (for tasks that do not set their own).
    pub max_attempts: u32,
    /// The delay after a first failed attempt; it doubles with each further
    /// failure up to `backoff_max` (docs/spec.md §3). At most `backoff_max`.
    pub backoff_base: Duration,
    /// The cap on a retry's delay before jitter, which may add up to a tenth.
    pub backoff_max: Duration,
    /// How long a completed or cancelled task's key still deduplicates.
    pub dedup_window: Duration,
    /// Largest payload accepted, in bytes.
    pub max_payload: u64,
    /// A paused queue hands out nothing; enqueues still work.
    pub paused: bool,
    /// At most so many tasks handed out per period, enforced at claim
    /// (docs/spec.md §4); `None`: no limit.
    pub rate_limit: Option<RateLimit>,
    /// At most so many tasks leased at once, across every worker and
    /// process; `None`: no limit.
    pub max_leased: Option<u32>,
    /// At most so many tasks of one group leased at once, across every
    /// worker and process; `None`: no limit. Tasks without a group are not
    /// bound by it.
    pub group_concurrency: Option<u32>,
    /// At most so many tasks of one group handed out per period, each
    /// group with a bucket of its own, enforced at claim (docs/spec.md
    /// §4); `None`: no limit. Tasks without a group are not bound by it.
    pub group_rate_limit: Option<RateLimit>,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            lease: Duration::from_secs(30),
            max_attempts: 20,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(3600),
            dedup_window: Duration::from_secs(15 * 60),
            max_payload: 1024 * 1024,
            paused: false,
            rate_limit: None,
            max_leased: None,
            group_concurrency: None,
            group_rate_limit: None,
        }
    }
}

impl QueueSettings {
    /// Checks the settings are coherent; a store refuses them otherwise.
    pub fn validate(&self) -> Result<(), StoreError> {
        let bad = |m: &str| Err(StoreError::BadRequest(m.to_string()));
        if self.lease.is_zero() {
            return bad("lease_ms must be at least 1");
        }
        if self.max_attempts == 0 {
            return bad("max_attempts must be at least 1");
        }
        if self.backoff_base > self.backoff_max {
            return bad("backoff_base_ms must not exceed backoff_max_ms");
        }
        if self.max_payload > MAX_PAYLOAD_LIMIT {
            return Err(StoreError::bad_request(format!(
                "max_payload must be at most {MAX_PAYLOAD_LIMIT} (64 MiB), got {}",
                self.max_payload
            )));
        }
        for (name, limit) in [
            ("rate_limit", &self.rate_limit),
            ("group_rate_limit", &self.group_rate_limit),
        ] {
            if let Some(r) = limit {
                r.validate(name)?;
            }
        }
        if self.max_leased == Some(0) {
            return bad("max_leased must be at least 1 (or null for no limit)");
        }
        if self.group_concurrency == Some(0) {
            return bad("group_concurrency must be at least 1 (or null for no limit)");
        }
        Ok(())
    }
}

/// A change of a queue's settings: each field given replaces the queue's,
/// each absent one keeps its value (or the default, for a queue the change
/// creates). [`From<QueueSettings>`] gives a change naming every field.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct QueueChange {
    /// A new [`QueueSettings::lease`].
    pub lease: Option<Duration>,
    /// A new [`QueueSettings::max_attempts`]; tasks already enqueued keep
    /// theirs.
    pub max_attempts: Option<u32>,
    /// A new [`QueueSettings::backoff_base`].
    pub backoff_base: Option<Duration>,
    /// A new [`QueueSettings::backoff_max`].
    pub backoff_max: Option<Duration>,
    /// A new [`QueueSettings::dedup_window`].
    pub dedup_window: Option<Duration>,
    /// A new [`QueueSettings::max_payload`]; tasks already enqueued stay.
    pub max_payload: Option<u64>,
    /// Pauses (`true`) or resumes (`false`) the queue.
    pub paused: Option<bool>,
    /// A new [`QueueSettings::rate_limit`]: `Some(None)` removes the limit.
    pub rate_limit: Option<Option<RateLimit>>,
    /// A new [`QueueSettings::max_leased`]: `Some(None)` removes the limit.
    pub max_leased: Option<Option<u32>>,
    /// A new [`QueueSettings::group_concurrency`]: `Some(None)` removes the
    /// limit.
    pub group_concurrency: Option<Option<u32>>,
    /// A new [`QueueSettings::group_rate_limit`]: `Some(None)` removes the
    /// limit.
    pub group_rate_limit: Option<Option<RateLimit>>,
}

impl QueueChange {
    /// `current` with the given fields replaced, if the result is coherent
    /// ([`QueueSettings::validate`]).
    pub fn apply(self, current: QueueSettings) -> Result<QueueSettings, StoreError> {
        let changed = QueueSettings {
            lease: self.lease.unwrap_or(current.lease),
            max_attempts: self.max_attempts.unwrap_or(current.max_attempts),
            backoff_base: self.backoff_base.unwrap_or(current.backoff_base),
            backoff_max: self.backoff_max.unwrap_or(current.backoff_max),
            dedup_window: self.dedup_window.unwrap_or(current.dedup_window),
            max_payload: self.max_payload.unwrap_or(current.max_payload),
            paused: self.paused.unwrap_or(current.paused),
            rate_limit: self.rate_limit.unwrap_or(current.rate_limit),
            max_leased: self.max_leased.unwrap_or(current.max_leased),
            group_concurrency: self.group_concurrency.unwrap_or(current.group_concurrency),
            group_rate_limit: self.group_rate_limit.unwrap_or(current.group_rate_limit),
        };
        changed.validate()?;
        Ok(changed)
    }
}

impl From<QueueSettings> for QueueChange {
    fn from(s: QueueSettings) -> Self {
        QueueChange {
            lease: Some(s.lease),
            max_attempts: Some(s.max_attempts),
            backoff_base: Some(s.backoff_base),
            backoff_max: Some(s.backoff_max),
            dedup_window: Some(s.dedup_window),
            max_payload: Some(s.max_payload),
            paused: Some(s.paused),
            rate_limit: Some(s.rate_limit),
            max_leased: Some(s.max_leased),
            group_concurrency: Some(s.group_concurrency),
            group_rate_limit: Some(s.group_rate_limit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_spec_and_validate() {
        let s = QueueSettings::default();
        assert_eq!(s.lease, Duration::from_secs(30));
        assert_eq!(s.max_attempts, 20);
        assert_eq!(s.dedup_window, Duration::from_secs(900));
        assert!(s.validate().is_ok());
    }

    #[test]
    fn incoherent_settings_are_refused() {
        let s = QueueSettings {
            max_attempts: 0,
            ..QueueSettings::default()
        };
        assert!(s.validate().is_err());
        let s = QueueSettings {
            max_payload: MAX_PAYLOAD_LIMIT + 1,
            ..QueueSettings::default()
        };
        assert!(s.validate().is_err());
        let s = QueueSettings {
            backoff_base: Duration::from_secs(10),
            backoff_max: Duration::from_secs(1),
            ..QueueSettings::default()
        };
        assert!(s.validate().is_err());
    }

    #[test]
    fn a_change_replaces_only_the_fields_it_gives() {
        let current = QueueSettings {
            paused: true,
            max_attempts: 3,
            ..QueueSettings::default()
        };
        let change = QueueChange {
            lease: Some(Duration::from_secs(5)),
            ..QueueChange::default()
        };
        let changed = change.apply(current.clone());
        assert_eq!(
            changed,
            Ok(QueueSettings {
                lease: Duration::from_secs(5),
                ..current
            })
        );
    }

    #[test]
    fn a_full_change_replaces_everything() {
        let wanted = QueueSettings {
            lease: Duration::from_secs(7),
            max_attempts: 2,
            backoff_base: Duration::from_millis(10),
            backoff_max: Duration::from_millis(20),
            dedup_window: Duration::ZERO,
            max_payload: 10,
            paused: true,
            rate_limit: Some(RateLimit {
                limit: 5,
                period: Duration::from_millis(100),
                burst: 2,
            }),
            max_leased: Some(4),
            group_concurrency: Some(3),
            group_rate_limit: Some(RateLimit {
                limit: 1,
                period: Duration::from_secs(1),
                burst: 1,
            }),
        };
        let current = QueueSettings::default();
        assert_eq!(QueueChange::from(wanted.clone()).apply(current), Ok(wanted));
    }

    #[test]
    fn a_change_removes_a_limit_only_when_it_says_so() {
        let current = QueueSettings {
            max_leased: Some(3),
            ..QueueSettings::default()
        };
        let keep = QueueChange::default().apply(current.clone());
        assert_eq!(keep.map(|s| s.max_leased), Ok(Some(3)));
        let clear = QueueChange {
            max_leased: Some(None),
            ..QueueChange::default()
        };
        assert_eq!(clear.apply(current).map(|s| s.max_leased), Ok(None));
    }

    #[test]
    fn a_change_is_checked_against_the_fields_it_keeps() {
        let current = QueueSettings {
            backoff_max: Duration::from_secs(2),
            ..QueueSettings::default()
        };
        let too_slow = QueueChange {
            backoff_base: Some(Duration::from_secs(3)),
            ..QueueChange::default()
        };
        assert_eq!(
            too_slow.apply(current).map_err(|e| e.code()),
            Err("bad_request")
        );
        for bad in [
            QueueChange {
                lease: Some(Duration::ZERO),
                ..QueueChange::default()
            },
            QueueChange {
                max_attempts: Some(0),
                ..QueueChange::default()
            },
            QueueChange {
                max_payload: Some(MAX_PAYLOAD_LIMIT + 1),
                ..QueueChange::default()
            },
            QueueChange {
                max_leased: Some(Some(0)),
                ..QueueChange::default()
            },
            QueueChange {
                rate_limit: Some(Some(RateLimit {
                    limit: 0,
                    period: Duration::from_secs(1),
                    burst: 1,
                })),
                ..QueueChange::default()
            },
            QueueChange {
                rate_limit: Some(Some(RateLimit {
                    limit: 1,
                    period: Duration::ZERO,
                    burst: 1,
                })),
                ..QueueChange::default()
            },
            QueueChange {
                rate_limit: Some(Some(RateLimit {
                    limit: 1,
                    period: Duration::from_secs(1),
                    burst: 0,
                })),
                ..QueueChange::default()
            },
        ] {
            assert!(bad.apply(QueueSettings::default()).is_err(), "{bad:?}");
        }
    }
}
