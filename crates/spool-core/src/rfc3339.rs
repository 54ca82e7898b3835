//! Timestamps on the wire: RFC 3339, UTC, exactly millisecond precision
//! (`2026-11-21T23:59:00.123Z`, docs/spec.md §7.1).
//!
//! Parsing accepts any RFC 3339 offset and converts to UTC; digits below the
//! millisecond are dropped (rounded toward the past, so a time never moves
//! later than the client asked). Formatting is exact for years 0000–9999,
//! the range RFC 3339 can express; the API bounds every input so stored
//! times stay inside it.

use crate::time::Timestamp;
use chrono::{DateTime, SecondsFormat, Utc};

/// The latest instant RFC 3339 can express: 9999-12-31T23:59:59.999Z.
pub const MAX_MILLIS: i64 = 253_402_300_799_999;
/// The earliest: 0000-01-01T00:00:00.000Z.
pub const MIN_MILLIS: i64 = -62_167_219_200_000;

/// Why a timestamp could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// The text is not an RFC 3339 timestamp; it carries the text.
    #[error("{0:?} is not an RFC 3339 timestamp (e.g. 2026-11-21T23:59:00.123Z)")]
    Parse(String),
    /// A time, in milliseconds since the epoch, outside 0000–9999.
    #[error("timestamp {0} ms is outside the years 0000-9999")]
    OutOfRange(i64),
}

/// Reads an RFC 3339 timestamp.
pub fn parse(s: &str) -> Result<Timestamp, TimeError> {
    let t = DateTime::parse_from_rfc3339(s).map_err(|_| TimeError::Parse(s.to_string()))?;
    // chrono reads a leap second (`:60`) as a fraction of 1000 ms or more
    // in the second before; capping it keeps the time from moving into the
    // next second, later than the client asked.
    let ms = t.timestamp() * 1000 + i64::from(t.timestamp_subsec_millis().min(999));
    if !(MIN_MILLIS..=MAX_MILLIS).contains(&ms) {
        return Err(TimeError::OutOfRange(ms));
    }
    Ok(Timestamp::from_millis(ms))
}

/// Writes a timestamp as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format(ts: Timestamp) -> Result<String, TimeError> {
    let ms = ts.as_millis();
    if !(MIN_MILLIS..=MAX_MILLIS).contains(&ms) {
        return Err(TimeError::OutOfRange(ms));
    }
    let t = DateTime::<Utc>::from_timestamp_millis(ms).ok_or(TimeError::OutOfRange(ms))?;
    Ok(t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_exactly_three_fraction_digits() {
        let t = parse("2026-11-21T23:59:00.123Z");
        assert_eq!(
            t.clone().map(format),
            Ok(Ok("2026-11-21T23:59:00.123Z".into()))
        );
        assert_eq!(
            format(Timestamp::from_millis(0)),
            Ok("1970-01-01T00:00:00.000Z".into())
        );
        assert_eq!(
            format(Timestamp::from_millis(-1)),
            Ok("1969-12-31T23:59:59.999Z".into())
        );
        assert_eq!(
            format(Timestamp::from_millis(MIN_MILLIS)),
            Ok("0000-01-01T00:00:00.000Z".into())
        );
        assert_eq!(
            format(Timestamp::from_millis(MAX_MILLIS)),
            Ok("9999-12-31T23:59:59.999Z".into())
        );
    }

    #[test]
    fn a_leap_second_reads_as_the_last_millisecond_before_it() {
        assert_eq!(
            parse("2016-12-31T23:59:60.5Z").map(format),
            Ok(Ok("2016-12-31T23:59:59.999Z".into()))
        );
    }

    #[test]
    fn offsets_convert_to_utc_and_sub_millis_round_down() {
        assert_eq!(
            parse("2026-11-22T01:59:00.1239+02:00").map(format),
            Ok(Ok("2026-11-21T23:59:00.123Z".into()))
        );
        assert_eq!(
            parse("1969-12-31T23:59:59.9999Z"),
            Ok(Timestamp::from_millis(-1))
        );
    }

    #[test]
    fn garbage_and_out_of_range_are_refused() {
        assert!(parse("yesterday").is_err());
        assert!(parse("2026-11-21").is_err());
        assert!(parse("2026-13-01T00:00:00Z").is_err());
        assert!(format(Timestamp::from_millis(MAX_MILLIS)).is_ok());
        assert!(format(Timestamp::from_millis(MAX_MILLIS + 1)).is_err());
        assert!(format(Timestamp::from_millis(i64::MIN)).is_err());
    }
}
