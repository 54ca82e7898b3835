//! Formatting for people: times, ages and plain tables with aligned columns.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use spool_core::Timestamp;

/// A time for a table: UTC to the second, e.g. `2026-11-21 23:59:00Z`.
pub(super) fn time(t: Timestamp) -> String {
    match DateTime::<Utc>::from_timestamp_millis(t.as_millis()) {
        Some(dt) => dt.format("%Y-%m-%d %H:%M:%SZ").to_string(),
        None => format!("{}ms", t.as_millis()),
    }
}

/// A time for JSON: RFC 3339 with milliseconds, as the HTTP API writes it.
pub(super) fn time_json(t: Timestamp) -> serde_json::Value {
    match DateTime::<Utc>::from_timestamp_millis(t.as_millis()) {
        Some(dt) => dt.to_rfc3339_opts(SecondsFormat::Millis, true).into(),
        None => t.as_millis().into(),
    }
}

/// A duration, short: `250ms`, `4.2s`, `3m07s`, `2h05m`, `3d04h`.
pub(super) fn age(d: Duration) -> String {
    let ms = d.as_millis();
    let s = d.as_secs();
    match s {
        _ if ms < 1_000 => format!("{ms}ms"),
        0..60 => format!("{:.1}s", d.as_secs_f64()),
        60..3_600 => format!("{}m{:02}s", s / 60, s % 60),
        3_600..86_400 => format!("{}h{:02}m", s / 3_600, s % 3_600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3_600),
    }
}

/// A duration exactly, in the units `--every` takes: `1s`, `250ms`, `1h30m`.
pub(super) fn duration(d: Duration) -> String {
    let mut ms = d.as_millis();
    let mut out = String::new();
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms >= size {
            out.push_str(&format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    if ms > 0 || out.is_empty() {
        out.push_str(&format!("{ms}ms"));
    }
    out
}

/// `text` on one line and at most `max` characters, for a table cell.
pub(super) fn cell(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Rows under a header, each column as wide as its widest cell.
pub(super) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc() {
        assert_eq!(time(Timestamp(1_795_305_540_123)), "2026-11-21 23:59:00Z");
        assert_eq!(
            time_json(Timestamp(1_795_305_540_123)),
            serde_json::json!("2026-11-21T23:59:00.123Z")
        );
    }

    #[test]
    fn ages_are_short() {
        assert_eq!(age(Duration::from_millis(250)), "250ms");
        assert_eq!(age(Duration::from_millis(4_200)), "4.2s");
        assert_eq!(age(Duration::from_secs(187)), "3m07s");
        assert_eq!(age(Duration::from_secs(7_500)), "2h05m");
        assert_eq!(age(Duration::from_secs(3 * 86_400 + 4 * 3_600)), "3d04h");
    }

    #[test]
    fn durations_are_exact() {
        assert_eq!(duration(Duration::from_secs(1)), "1s");
        assert_eq!(duration(Duration::from_millis(250)), "250ms");
        assert_eq!(duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(duration(Duration::from_millis(1_500)), "1s500ms");
        assert_eq!(duration(Duration::ZERO), "0ms");
    }

    #[test]
    fn cells_are_one_short_line() {
        assert_eq!(cell("a\n  b", 10), "a b");
        assert_eq!(cell("abcdefgh", 5), "abcd…");
    }

    #[test]
    fn tables_align() {
        let rows = vec![vec!["1".to_string(), "long-kind".to_string()]];
        assert_eq!(table(&["ID", "KIND"], &rows), "ID  KIND\n1   long-kind\n");
    }
}
