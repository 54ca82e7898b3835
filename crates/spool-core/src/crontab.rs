//! Cron expressions as users write them, turned into what the `cron` crate
//! computes, and their times in a time zone.
//!
//! Accepted: the standard 5 fields (minute hour day-of-month month
//! day-of-week), 6 fields with seconds first, and the macros `@yearly`
//! (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`) and
//! `@hourly`. The meaning is crontab's: day-of-week 0–7 with 0 and 7 for
//! Sunday (the `cron` crate counts 1–7 from Sunday, so numbers are turned
//! into names), and when both day fields are restricted a day matching
//! either one fires (the `cron` crate wants both, so such an expression
//! becomes two schedules).
//!
//! Times are computed on the zone's wall clock, then placed on the
//! timeline as cron daemons do: a wall time that occurs twice (clocks set
//! back) fires at its first occurrence only; one that does not occur
//! (clocks set forward) fires the gap's length later, once. So a 02:30
//! daily job fires once on both transition days.

use std::str::FromStr;

use chrono::{DateTime, NaiveDateTime, Offset, TimeZone, Utc};

use crate::error::StoreError;

/// What a time zone's transition cannot exceed: a wall time compared with
/// the offset a day earlier is past any transition.
const DAY_SECS: i64 = 86_400;

/// A parsed cron expression in a time zone.
#[derive(Clone, Debug)]
pub(crate) struct CronTimes {
    /// Fires when any of these does (wall-clock times, read as UTC).
    schedules: Vec<cron::Schedule>,
    zone: chrono_tz::Tz,
}

const FIELDS_ERROR: &str = "cron must have 5 fields (minute hour day-of-month month day-of-week), \
     6 with seconds first, or be a macro (@hourly, @daily, @weekly, @monthly, @yearly)";

impl CronTimes {
    pub(crate) fn parse(expr: &str, tz: Option<&str>) -> Result<CronTimes, StoreError> {
        let zone = match tz {
            Some(name) => chrono_tz::Tz::from_str(name)
                .map_err(|_| StoreError::bad_request(format!("unknown time zone {name:?}")))?,
            None => chrono_tz::UTC,
        };
        let schedules = six_fields(expr)?
            .iter()
            .map(|e| {
                cron::Schedule::from_str(e).map_err(|err| {
                    StoreError::bad_request(format!("invalid cron expression {expr:?}: {err}"))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(CronTimes { schedules, zone })
    }

    /// The first time strictly after `t` (Unix milliseconds).
    pub(crate) fn next_after(&self, t: i64) -> Option<i64> {
        let at = Utc.timestamp_millis_opt(t).single()?;
        let mut wall = at.with_timezone(&self.zone).naive_local();
        // Wall times that land at or before `t` (the second pass of an hour
        // repeated when clocks go back) are skipped; a day of per-second
        // times bounds the walk.
        for _ in 0..DAY_SECS {
            wall = self
                .schedules
                .iter()
                .filter_map(|s| s.after(&Utc.from_utc_datetime(&wall)).next())
                .min()?
                .naive_utc();
            let instant = self.place(wall)?.timestamp_millis();
            if instant > t {
                return Some(instant);
            }
        }
        None
    }

    /// Where wall time `wall` falls on the timeline: its first occurrence,
    /// or, inside a gap, as far after the gap's start as it is into it.
    fn place(&self, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
        match self.zone.from_local_datetime(&wall) {
            chrono::LocalResult::Single(d) | chrono::LocalResult::Ambiguous(d, _) => {
                Some(d.with_timezone(&Utc))
            }
            chrono::LocalResult::None => {
                let before = wall - chrono::Duration::seconds(DAY_SECS);
                let offset = self.zone.offset_from_utc_datetime(&before).fix();
                let utc = wall - chrono::Duration::seconds(i64::from(offset.local_minus_utc()));
                Some(Utc.from_utc_datetime(&utc))
            }
        }
    }
}

/// The expression as one or two 6-field expressions in the `cron` crate's
/// dialect (two when both day fields are restricted: either one fires).
fn six_fields(expr: &str) -> Result<Vec<String>, StoreError> {
    let expanded = match expr.trim() {
        "@yearly" | "@annually" => "0 0 0 1 1 *",
        "@monthly" => "0 0 0 1 * *",
        "@weekly" => "0 0 0 * * 0",
        "@daily" | "@midnight" => "0 0 0 * * *",
        "@hourly" => "0 0 * * * *",
        other if other.starts_with('@') => {
            return Err(StoreError::bad_request(format!(
                "unknown cron macro {other:?}: {FIELDS_ERROR}"
            )))
        }
        other => other,
    };
    let mut fields: Vec<&str> = expanded.split_whitespace().collect();
    match fields.len() {
        5 => fields.insert(0, "0"),
        6 => {}
        _ => return Err(StoreError::bad_request(FIELDS_ERROR)),
    }
    let dow = days_of_week(fields[5])?;
    let any = |f: &str| f == "*" || f == "?";
    let head = fields[..4].join(" ");
    let (dom, month) = (fields[3], fields[4]);
    let seconds_to_hours = fields[..3].join(" ");
    if !any(dom) && !any(&dow) {
        return Ok(vec![
            format!("{head} {month} *"),
            format!("{seconds_to_hours} * {month} {dow}"),
        ]);
    }
    Ok(vec![format!("{head} {month} {dow}")])
}

const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// A crontab day-of-week field (0–7, 0 and 7 Sunday) with its numbers
/// turned into day names, which the `cron` crate reads the same way.
fn days_of_week(field: &str) -> Result<String, StoreError> {
    if field == "*" || field == "?" || field.chars().any(|c| c.is_ascii_alphabetic()) {
        return Ok(field.to_string());
    }
    let bad = || {
        StoreError::bad_request(format!(
            "invalid day-of-week {field:?}: use 0-7 (0 and 7 are Sunday) or SUN-SAT"
        ))
    };
    let day = |s: &str| s.parse::<usize>().ok().filter(|&d| d <= 7).ok_or_else(bad);
    let mut names: Vec<&str> = Vec::new();
    for item in field.split(',') {
        let (base, step) = match item.split_once('/') {
            Some((b, s)) => (
                b,
                s.parse::<usize>().ok().filter(|&s| s > 0).ok_or_else(bad)?,
            ),
            None => (item, 1),
        };
        let (from, to) = match base.split_once('-') {
            _ if base == "*" => (0, 6),
            Some((a, b)) => (day(a)?, day(b)?),
            None if step > 1 => (day(base)?, 7),
            None => (day(base)?, day(base)?),
        };
        if from > to {
            return Err(bad());
        }
        for d in (from..=to).step_by(step) {
            let name = DAYS[d % 7];
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    Ok(names.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Milliseconds of a UTC time written `YYYY-MM-DDTHH:MM:SS`.
    fn at(s: &str) -> i64 {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S")
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .and_utc()
            .timestamp_millis()
    }

    fn times(expr: &str, tz: Option<&str>, from: &str, n: usize) -> Vec<i64> {
        let c = CronTimes::parse(expr, tz).unwrap_or_else(|e| panic!("{expr}: {e}"));
        let mut t = at(from);
        (0..n)
            .map(|_| {
                t = c.next_after(t).unwrap_or_else(|| panic!("{expr}: no time"));
                t
            })
            .collect()
    }

    #[test]
    fn five_fields_are_minutes_first() {
        assert_eq!(
            times("0 9 * * *", None, "2026-03-02T00:00:00", 2),
            [at("2026-03-02T09:00:00"), at("2026-03-03T09:00:00")]
        );
        assert_eq!(
            times("*/20 * * * * *", None, "2026-03-02T00:00:00", 2),
            [at("2026-03-02T00:00:20"), at("2026-03-02T00:00:40")]
        );
    }

    #[test]
    fn days_of_week_count_from_sunday_zero() {
        // 2026-03-02 is a Monday.
        assert_eq!(
            times("0 9 * * 1-5", None, "2026-03-01T00:00:00", 6),
            [
                at("2026-03-02T09:00:00"),
                at("2026-03-03T09:00:00"),
                at("2026-03-04T09:00:00"),
                at("2026-03-05T09:00:00"),
                at("2026-03-06T09:00:00"),
                at("2026-03-09T09:00:00"),
            ]
        );
        for sunday in ["0 0 * * 0", "0 0 * * 7", "0 0 * * SUN", "@weekly"] {
            assert_eq!(
                times(sunday, None, "2026-03-02T00:00:00", 1),
                [at("2026-03-08T00:00:00")],
                "{sunday}"
            );
        }
        assert_eq!(
            times("0 0 * * */3", None, "2026-03-01T00:00:00", 3),
            [
                at("2026-03-04T00:00:00"),
                at("2026-03-07T00:00:00"),
                at("2026-03-08T00:00:00"),
            ]
        );
    }

    #[test]
    fn either_restricted_day_field_fires() {
        // The 13th, and every Friday (2026-03-06 is one).
        assert_eq!(
            times("0 0 13 * 5", None, "2026-03-01T00:00:00", 3),
            [
                at("2026-03-06T00:00:00"),
                at("2026-03-13T00:00:00"),
                at("2026-03-20T00:00:00"),
            ]
        );
    }

    #[test]
    fn macros() {
        let from = "2026-03-02T10:30:00";
        assert_eq!(times("@hourly", None, from, 1), [at("2026-03-02T11:00:00")]);
        assert_eq!(times("@daily", None, from, 1), [at("2026-03-03T00:00:00")]);
        assert_eq!(
            times("@monthly", None, from, 1),
            [at("2026-04-01T00:00:00")]
        );
        for yearly in ["@yearly", "@annually"] {
            assert_eq!(times(yearly, None, from, 1), [at("2027-01-01T00:00:00")]);
        }
    }

    #[test]
    fn wrong_expressions_are_refused() {
        for bad in [
            "* * * *",
            "* * * * * * *",
            "@often",
            "0 0 * * 8",
            "0 0 * * 5-1",
            "x y z a b",
        ] {
            assert!(CronTimes::parse(bad, None).is_err(), "{bad}");
        }
        assert!(CronTimes::parse("0 0 * * *", Some("Mars/Base")).is_err());
    }

    #[test]
    fn a_daily_time_in_the_spring_gap_fires_once_that_day() {
        // Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST; 02:30 does not
        // occur and fires at 03:30 CEST (01:30 UTC).
        assert_eq!(
            times(
                "30 2 * * *",
                Some("Europe/Berlin"),
                "2026-03-27T12:00:00",
                4
            ),
            [
                at("2026-03-28T01:30:00"),
                at("2026-03-29T01:30:00"),
                at("2026-03-30T00:30:00"),
                at("2026-03-31T00:30:00"),
            ]
        );
    }

    #[test]
    fn a_daily_time_in_the_repeated_autumn_hour_fires_once_that_day() {
        // Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 occurs
        // twice and fires at the first (00:30 UTC) only.
        assert_eq!(
            times(
                "30 2 * * *",
                Some("Europe/Berlin"),
                "2026-10-23T12:00:00",
                4
            ),
            [
                at("2026-10-24T00:30:00"),
                at("2026-10-25T00:30:00"),
                at("2026-10-26T01:30:00"),
                at("2026-10-27T01:30:00"),
            ]
        );
        // Asked from within the second pass, the next is the next day's.
        assert_eq!(
            times(
                "30 2 * * *",
                Some("Europe/Berlin"),
                "2026-10-25T01:15:00",
                1
            ),
            [at("2026-10-26T01:30:00")]
        );
    }

    #[test]
    fn new_york_transitions() {
        // 2026-03-08 (spring) and 2026-11-01 (autumn), 02:30 local.
        let ny = Some("America/New_York");
        assert_eq!(
            times("30 2 * * *", ny, "2026-03-07T12:00:00", 3),
            [
                at("2026-03-08T07:30:00"),
                at("2026-03-08T07:30:00") + 86_400_000 - 3_600_000,
                at("2026-03-10T06:30:00"),
            ]
        );
        assert_eq!(
            times("30 1 * * *", ny, "2026-10-31T12:00:00", 2),
            [at("2026-11-01T05:30:00"), at("2026-11-02T06:30:00")]
        );
    }
}
