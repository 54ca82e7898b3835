//! How values read on a page: counts, times, ages, durations and rates.
//!
//! Times are shown in UTC (the store's clock is the only clock) next to how
//! far they are from the store's "now", which is what an operator wants to
//! know at a glance.

use std::time::Duration;

use spool_core::Timestamp;

use crate::rfc3339;

/// `1234567` as `1,234,567`.
pub(super) fn count(n: u64) -> String {
    let digits = n.to_string();
    let head = match digits.len() % 3 {
        0 => 3,
        r => r,
    };
    let (first, rest) = digits.split_at(head.min(digits.len()));
    let mut out = first.to_string();
    for group in rest.as_bytes().chunks(3) {
        out.push(',');
        out.extend(group.iter().copied().map(char::from));
    }
    out
}

/// RFC 3339 with milliseconds, for `<time datetime>`; the raw milliseconds
/// for instants RFC 3339 cannot express.
pub(super) fn machine_time(t: Timestamp) -> String {
    rfc3339::format(t).unwrap_or_else(|_| format!("{} ms", t.as_millis()))
}

/// `2026-11-21 23:59:00 UTC`.
pub(super) fn time(t: Timestamp) -> String {
    let text = rfc3339::format(t).ok();
    match text.as_deref().map(|s| (s.get(..10), s.get(11..19))) {
        Some((Some(date), Some(clock))) => format!("{date} {clock} UTC"),
        _ => format!("{} ms since 1970", t.as_millis()),
    }
}

/// A span for people: `850 ms`, `42 s`, `3 min 5 s`, `2 h 10 min`, `3 d 4 h`.
pub(super) fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    let s = d.as_secs();
    match s {
        0 => format!("{ms} ms"),
        1..=59 => format!("{s} s"),
        60..=3599 => two(s / 60, "min", s % 60, "s"),
        3600..=86_399 => two(s / 3600, "h", s % 3600 / 60, "min"),
        _ => two(s / 86_400, "d", s % 86_400 / 3600, "h"),
    }
}

fn two(a: u64, unit_a: &str, b: u64, unit_b: &str) -> String {
    if b == 0 {
        format!("{a} {unit_a}")
    } else {
        format!("{a} {unit_a} {b} {unit_b}")
    }
}

/// `12 s ago`, `in 3 min`, or `now`, relative to the store's `now`.
pub(super) fn relative(t: Timestamp, now: Timestamp) -> String {
    if t.as_millis().abs_diff(now.as_millis()) < 1000 {
        "now".to_string()
    } else if t < now {
        format!("{} ago", duration(now.since(t)))
    } else {
        format!("in {}", duration(t.since(now)))
    }
}

/// Tasks per second: `0`, `0.25/s`, `12/s`, `3.4k/s`.
pub(super) fn rate(per_s: f64) -> String {
    if !per_s.is_finite() || per_s <= 0.0 {
        "0/s".to_string()
    } else if per_s < 10.0 {
        format!("{:.2}/s", per_s)
    } else if per_s < 10_000.0 {
        format!("{:.0}/s", per_s)
    } else {
        format!("{:.1}k/s", per_s / 1000.0)
    }
}

/// `n` with the noun in the right number: `1 task`, `3 tasks`.
pub(super) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(Duration::from_millis(850)), "850 ms");
        assert_eq!(duration(Duration::from_secs(42)), "42 s");
        assert_eq!(duration(Duration::from_secs(185)), "3 min 5 s");
        assert_eq!(duration(Duration::from_secs(7200)), "2 h");
        assert_eq!(
            duration(Duration::from_secs(3 * 86_400 + 4 * 3600)),
            "3 d 4 h"
        );
    }

    #[test]
    fn times_are_relative_to_the_store() {
        let now = Timestamp(1_000_000);
        assert_eq!(relative(Timestamp(988_000), now), "12 s ago");
        assert_eq!(relative(Timestamp(1_180_000), now), "in 3 min");
        assert_eq!(relative(Timestamp(1_000_400), now), "now");
        assert_eq!(time(Timestamp(0)), "1970-01-01 00:00:00 UTC");
        assert_eq!(
            time(Timestamp(i64::MAX)),
            format!("{} ms since 1970", i64::MAX)
        );
    }

    #[test]
    fn rates_round_sensibly() {
        assert_eq!(rate(0.0), "0/s");
        assert_eq!(rate(f64::NAN), "0/s");
        assert_eq!(rate(0.25), "0.25/s");
        assert_eq!(rate(123.4), "123/s");
        assert_eq!(rate(34_000.0), "34.0k/s");
    }
}
