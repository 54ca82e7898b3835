//! Parsers for option values, so that a bad name, payload or duration is
//! refused with a clear message before anything is sent.

use std::time::Duration;

use spool_core::{Kind, ParentFailure, Payload, QueueName, TaskGroup, TaskKey};

pub(crate) fn queue(s: &str) -> Result<QueueName, String> {
    QueueName::new(s).map_err(|e| e.to_string())
}

pub(crate) fn kind(s: &str) -> Result<Kind, String> {
    Kind::new(s).map_err(|e| e.to_string())
}

pub(crate) fn key(s: &str) -> Result<TaskKey, String> {
    TaskKey::new(s).map_err(|e| e.to_string())
}

pub(crate) fn group(s: &str) -> Result<TaskGroup, String> {
    TaskGroup::new(s).map_err(|e| e.to_string())
}

/// `cancel` or `run`: what a parent ending dead or cancelled does.
pub(crate) fn parent_failure(s: &str) -> Result<ParentFailure, String> {
    s.parse()
}

/// A JSON payload, checked here and sent as written (numbers are never
/// re-parsed, so the round trip stays exact).
pub(crate) fn payload(s: &str) -> Result<Payload, String> {
    serde_json::from_str::<serde::de::IgnoredAny>(s).map_err(|e| {
        format!("not valid JSON: {e} (a string needs its quotes: --payload '\"text\"')")
    })?;
    Ok(Payload::json(s.as_bytes().to_vec()))
}

/// The payload of a task given none: JSON `null`.
pub(crate) fn no_payload() -> Payload {
    Payload::json(&b"null"[..])
}

/// A duration such as `250ms`, `5s`, `2m`, `1h30m` or `1d`.
pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?}: expected e.g. 250ms, 5s, 2m, 1h30m, 1d");
    let mut total = Duration::ZERO;
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let unit_ms = match &rest[digits..digits + unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(bad()),
        };
        let ms = number.checked_mul(unit_ms).ok_or_else(bad)?;
        total = total
            .checked_add(Duration::from_millis(ms))
            .ok_or_else(bad)?;
        rest = &rest[digits + unit_len..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(duration("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn bad_durations_are_refused() {
        for s in [
            "",
            "5",
            "s",
            "5x",
            "1.5s",
            "-1s",
            "5 s",
            "99999999999999999999s",
        ] {
            assert!(duration(s).is_err(), "{s:?} was accepted");
        }
    }

    #[test]
    fn payloads_must_be_json() {
        assert!(payload(r#"{"to":"a@b.c","n":12345678901234567}"#).is_ok());
        assert!(payload("42").is_ok());
        assert!(payload("{oops").is_err());
        assert!(payload("text").is_err());
    }

    #[test]
    fn names_are_checked() {
        assert!(queue("emails").is_ok());
        assert!(queue("a b").is_err());
        assert!(queue("..").is_err());
        assert!(kind("send:v2").is_ok());
        assert!(kind("").is_err());
        assert!(group("customer 42 ü").is_ok());
        assert!(group("").is_err());
        assert!(group("..").is_err());
    }
}
