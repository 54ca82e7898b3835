//! Checks on scalar inputs: timestamps and `*_ms` durations.
//!
//! Out-of-range values are refused with a message naming the field, never
//! clamped (docs/spec.md §7.1). Durations are bounded so that `now + duration` stays
//! a time RFC 3339 can write.

use std::time::Duration;

use spool_core::{StoreError, Timestamp};

use crate::rfc3339;

/// The longest duration any `*_ms` field accepts: 100 years.
pub(super) const MAX_DURATION_MS: u64 = 100 * 365 * 24 * 3600 * 1000;

/// A duration field, at most [`MAX_DURATION_MS`].
pub(crate) fn duration_ms(field: &str, ms: u64) -> Result<Duration, StoreError> {
    if ms > MAX_DURATION_MS {
        return Err(StoreError::bad_request(format!(
            "{field} must be at most {MAX_DURATION_MS} (100 years), got {ms}"
        )));
    }
    Ok(Duration::from_millis(ms))
}

/// A duration field that must also be at least 1 ms.
pub(crate) fn non_zero_ms(field: &str, ms: u64) -> Result<Duration, StoreError> {
    if ms == 0 {
        return Err(StoreError::bad_request(format!(
            "{field} must be at least 1"
        )));
    }
    duration_ms(field, ms)
}

/// A timestamp field in RFC 3339.
pub(crate) fn timestamp(field: &str, s: &str) -> Result<Timestamp, StoreError> {
    rfc3339::parse(s).map_err(|e| StoreError::bad_request(format!("{field}: {e}")))
}
