//! A queue's claim limits (docs/spec.md §4): the rate limit's shape and the
//! token bucket that enforces it, shared by the stores that keep the bucket
//! in memory (the embedded engine, the reference model).
//!
//! The bucket holds at most `burst` tokens and refills continuously at
//! `limit` tokens per `period`; a claim for at most `n` tasks takes
//! `min(n, whole tokens)`. Tokens are counted exactly, in units of
//! `1 / period_ms` of a token, so refilling in many small steps gives the
//! same count as one large step, and no rounding ever hands out a task the
//! limit does not allow.
//!
//! A queue's `rate_limit` has one bucket; its `group_rate_limit` gives
//! each task group a bucket of its own, with the same rules.

use std::time::Duration;

use crate::error::StoreError;
use crate::time::{duration_millis, Timestamp};

/// At most `limit` tasks handed out per `period`, with bursts of up to
/// `burst` after a quiet spell.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RateLimit {
    /// Tasks per period, at least 1.
    pub limit: u32,
    /// The period, at least 1 ms.
    pub period: Duration,
    /// The bucket's capacity: the most tasks handed out at once after a
    /// quiet spell, at least 1.
    pub burst: u32,
}

impl RateLimit {
    /// Checks the limit is one a bucket can keep; `name` is the setting's,
    /// for the message.
    pub fn validate(&self, name: &str) -> Result<(), StoreError> {
        if self.limit == 0 {
            return Err(StoreError::bad_request(format!(
                "{name}.limit must be at least 1"
            )));
        }
        if self.period < Duration::from_millis(1) {
            return Err(StoreError::bad_request(format!(
                "{name}.period_ms must be at least 1"
            )));
        }
        if self.burst == 0 {
            return Err(StoreError::bad_request(format!(
                "{name}.burst must be at least 1"
            )));
        }
        Ok(())
    }

    /// The period in whole milliseconds, at least 1.
    fn period_ms(&self) -> u128 {
        u128::from(duration_millis(self.period).unsigned_abs()).max(1)
    }

    /// Units in one token.
    fn unit(&self) -> u128 {
        self.period_ms()
    }

    /// Units in a full bucket.
    fn capacity(&self) -> u128 {
        u128::from(self.burst) * self.unit()
    }
}

/// The tokens a queue has left, as of a moment.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TokenBucket {
    /// In units of `1 / period_ms` of a token.
    units: u128,
    at: Timestamp,
}

impl TokenBucket {
    /// A full bucket: a limit that was just set allows a burst at once.
    pub fn full(limit: &RateLimit, now: Timestamp) -> Self {
        TokenBucket {
            units: limit.capacity(),
            at: now,
        }
    }

    /// Adds what `limit` refilled since the bucket was last looked at.
    fn refill(&mut self, limit: &RateLimit, now: Timestamp) {
        if now <= self.at {
            return;
        }
        let elapsed = u128::from(duration_millis(now.since(self.at)).unsigned_abs());
        let added = elapsed.saturating_mul(u128::from(limit.limit));
        self.units = self.units.saturating_add(added).min(limit.capacity());
        self.at = now;
    }

    /// Whole tokens the bucket holds now.
    pub fn available(&mut self, limit: &RateLimit, now: Timestamp) -> u32 {
        self.refill(limit, now);
        u32::try_from(self.units / limit.unit()).unwrap_or(u32::MAX)
    }

    /// Whole tokens `bucket` holds at `now`, leaving it as it is; `None`
    /// is a bucket no claim has used yet, a full one.
    pub fn left(bucket: Option<&TokenBucket>, limit: &RateLimit, now: Timestamp) -> u32 {
        bucket.map_or(limit.burst, |&(mut b)| b.available(limit, now))
    }

    /// Takes `n` tokens, at most what is [`available`](Self::available).
    pub fn take(&mut self, limit: &RateLimit, now: Timestamp, n: u32) {
        self.refill(limit, now);
        self.units = self.units.saturating_sub(u128::from(n) * limit.unit());
    }

    /// How long until the bucket holds a whole token (zero if it does).
    pub fn next_token_in(&mut self, limit: &RateLimit, now: Timestamp) -> Duration {
        self.refill(limit, now);
        let missing = limit.unit().saturating_sub(self.units);
        let per_ms = u128::from(limit.limit).max(1);
        let ms = missing.div_ceil(per_ms);
        Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    const TEN_PER_SECOND: RateLimit = RateLimit {
        limit: 10,
        period: Duration::from_secs(1),
        burst: 3,
    };

    #[test]
    fn a_full_bucket_allows_the_burst_then_refills_at_the_rate() {
        let l = TEN_PER_SECOND;
        let mut b = TokenBucket::full(&l, at(0));
        assert_eq!(b.available(&l, at(0)), 3);
        b.take(&l, at(0), 3);
        assert_eq!(b.available(&l, at(0)), 0);
        assert_eq!(b.next_token_in(&l, at(0)), Duration::from_millis(100));
        assert_eq!(b.available(&l, at(99)), 0);
        assert_eq!(b.available(&l, at(100)), 1);
        assert_eq!(b.available(&l, at(10_000)), 3, "capped at the burst");
        b.take(&l, at(10_000), 2);
        assert_eq!(TokenBucket::left(Some(&b), &l, at(10_100)), 2);
        assert_eq!(b.available(&l, at(10_000)), 1, "left() changed nothing");
        assert_eq!(TokenBucket::left(None, &l, at(0)), 3, "unused is full");
    }

    #[test]
    fn many_small_refills_add_up_exactly() {
        let l = RateLimit {
            limit: 3,
            period: Duration::from_millis(7),
            burst: 100,
        };
        let mut b = TokenBucket::full(&l, at(0));
        b.take(&l, at(0), 100);
        for t in 0..=70 {
            b.available(&l, at(t));
        }
        assert_eq!(b.available(&l, at(70)), 30);
    }
}
