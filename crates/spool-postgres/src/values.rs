//! Conversions between Spool's values and column values, with the range
//! checks the database needs.
//!
//! Times are `timestamptz` holding whole milliseconds; durations are
//! `bigint` milliseconds; ids and tokens are `bigint`. A value that does not
//! fit is the caller's mistake (`bad_request`), checked before any write.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spool_core::{LeaseToken, StoreError, TaskId, Timestamp};

use crate::error::corrupt;

/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: the timestamps Spool
/// stores (PostgreSQL holds more, RFC 3339 not).
const MIN_TIME_MS: i64 = -62_135_596_800_000;
const MAX_TIME_MS: i64 = 253_402_300_799_999;

/// Longest duration stored (leases, backoffs, dedup windows, delays): 100
/// years, so that now plus any of them is still a timestamp.
pub(crate) const MAX_DURATION_MS: i64 = 100 * 365 * 24 * 3600 * 1000;

/// A timestamp as a column value.
pub(crate) fn time(t: Timestamp) -> Result<SystemTime, StoreError> {
    let ms = t.as_millis();
    if !(MIN_TIME_MS..=MAX_TIME_MS).contains(&ms) {
        return Err(StoreError::bad_request(
            "timestamps must lie between the years 1 and 9999",
        ));
    }
    let magnitude = Duration::from_millis(ms.unsigned_abs());
    let t = if ms >= 0 {
        UNIX_EPOCH.checked_add(magnitude)
    } else {
        UNIX_EPOCH.checked_sub(magnitude)
    };
    t.ok_or_else(|| StoreError::bad_request("timestamp out of range"))
}

/// A column value as a timestamp, truncated to the millisecond.
pub(crate) fn timestamp(t: SystemTime) -> Timestamp {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => Timestamp(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        // Before the epoch: round towards the past, as truncation does.
        Err(e) => {
            let d = e.duration();
            let ms = d.as_millis() + u128::from(d.subsec_nanos() % 1_000_000 != 0);
            Timestamp(i64::try_from(ms).map_or(i64::MIN, |ms| -ms))
        }
    }
}

/// A duration in whole milliseconds, refused beyond [`MAX_DURATION_MS`].
pub(crate) fn millis(what: &str, d: Duration) -> Result<i64, StoreError> {
    i64::try_from(d.as_millis())
        .ok()
        .filter(|ms| *ms <= MAX_DURATION_MS)
        .ok_or_else(|| StoreError::bad_request(format!("{what} must be at most 100 years")))
}

/// Milliseconds read back as a duration (never negative in the schema).
pub(crate) fn duration(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// A rate limit's whole tokens left, as a statement counts them
/// (`floor` of the bucket, never negative).
pub(crate) fn tokens(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

/// A task id as a column value. No task has a negative id, so an id beyond
/// `i64` (which no task can have) becomes one that is simply not found.
pub(crate) fn id(id: TaskId) -> i64 {
    i64::try_from(id.0).unwrap_or(-1)
}

/// Task ids as a column holds them; a negative one is a row changed
/// behind the store's back.
pub(crate) fn task_ids(ids: Vec<i64>) -> Result<Vec<TaskId>, StoreError> {
    ids.into_iter()
        .map(|id| u64::try_from(id).map(TaskId).map_err(corrupt))
        .collect()
}

/// A lease token as a column value: the same 64 bits.
pub(crate) fn token(t: LeaseToken) -> i64 {
    i64::from_ne_bytes(t.0.to_ne_bytes())
}

/// The partition (the index of [`crate::sql::PARTITIONS`], its `gen`) a
/// token's task was leased in: a claim writes it into the token's two low
/// bits (`sql/claim_update.sql`). A turn of the ring may have moved the
/// task on since, and a token from before tokens named partitions names
/// one at random: a hint, which a statement reading that partition alone
/// confirms or not.
pub(crate) fn leased_in(t: LeaseToken) -> usize {
    (t.0 & 3) as usize
}

/// Leases as the two array parameters a statement unnests: ids, tokens.
pub(crate) fn leases(leases: &[(TaskId, LeaseToken)]) -> (Vec<i64>, Vec<i64>) {
    leases.iter().map(|&(i, t)| (id(i), token(t))).unzip()
}

/// A column value as a lease token.
pub(crate) fn lease_token(v: i64) -> LeaseToken {
    LeaseToken(u64::from_ne_bytes(v.to_ne_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_to_the_millisecond() {
        for ms in [
            0,
            1,
            1_763_000_000_123,
            -1,
            -1_500,
            MIN_TIME_MS,
            MAX_TIME_MS,
        ] {
            let t = time(Timestamp(ms)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(timestamp(t), Timestamp(ms));
        }
        assert!(time(Timestamp(MAX_TIME_MS + 1)).is_err());
        assert!(time(Timestamp::MIN).is_err());
    }

    #[test]
    fn sub_millisecond_times_truncate_towards_the_past() {
        let t = UNIX_EPOCH + Duration::from_micros(1_500);
        assert_eq!(timestamp(t), Timestamp(1));
        let t = UNIX_EPOCH - Duration::from_micros(1_500);
        assert_eq!(timestamp(t), Timestamp(-2));
    }

    #[test]
    fn tokens_keep_all_64_bits() {
        for t in [0, 1, u64::MAX, 1 << 63] {
            assert_eq!(lease_token(token(LeaseToken(t))), LeaseToken(t));
        }
    }

    #[test]
    fn durations_are_bounded() {
        assert_eq!(millis("x", Duration::from_secs(2)).ok(), Some(2000));
        assert!(millis("x", Duration::MAX).is_err());
        assert_eq!(id(TaskId(u64::MAX)), -1);
    }
}
