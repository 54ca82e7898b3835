//! Trace context a task carries from its enqueue to its runs
//! (docs/spec.md §2): a W3C `traceparent`, checked once at enqueue and then
//! kept as given.
//!
//! Only version `00` is taken, in its exact form
//! `00-<trace id>-<parent id>-<flags>`: 32, 16 and 2 lowercase hex digits,
//! neither id all zeros. A producer that has no valid context sends none.

use crate::error::StoreError;

/// The length of a version-00 `traceparent`.
pub const TRACEPARENT_LEN: usize = 55;

/// The fields of a valid `traceparent`, borrowed from its text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TraceParent<'a> {
    /// The trace the task belongs to: 32 lowercase hex digits, not all zeros.
    pub trace_id: &'a str,
    /// The span that enqueued the task, which its runs descend from: 16
    /// lowercase hex digits, not all zeros.
    pub parent_id: &'a str,
    /// The trace flags; bit 0 says the producer's trace is sampled.
    pub flags: u8,
}

impl<'a> TraceParent<'a> {
    /// Parses `text`, refusing anything but the exact version-00 form with
    /// a `bad_request` that says what is wrong.
    pub fn parse(text: &'a str) -> Result<Self, StoreError> {
        let refuse = |why: &str| {
            StoreError::bad_request(format!(
                "traceparent must be 00-<trace id>-<parent id>-<flags> \
                 (32, 16 and 2 lowercase hex digits): {why}"
            ))
        };
        let mut fields = text.split('-');
        let (Some(version), Some(trace_id), Some(parent_id), Some(flags), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(refuse("it needs exactly four fields joined by '-'"));
        };
        if version != "00" {
            return Err(refuse("the version must be 00"));
        }
        let lower_hex = |b: u8| matches!(b, b'0'..=b'9' | b'a'..=b'f');
        for (field, what, len) in [
            (trace_id, "the trace id", 32),
            (parent_id, "the parent id", 16),
            (flags, "the flags", 2),
        ] {
            if field.len() != len || !field.bytes().all(lower_hex) {
                let why = format!("{what} must be {len} lowercase hex digits");
                return Err(refuse(&why));
            }
        }
        for (field, what) in [(trace_id, "the trace id"), (parent_id, "the parent id")] {
            if field.bytes().all(|b| b == b'0') {
                return Err(refuse(&format!("{what} must not be all zeros")));
            }
        }
        let flags = u8::from_str_radix(flags, 16)
            .map_err(|_| refuse("the flags must be 2 lowercase hex digits"))?;
        Ok(TraceParent {
            trace_id,
            parent_id,
            flags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_version_00_traceparent_parses_into_its_fields() {
        assert_eq!(GOOD.len(), TRACEPARENT_LEN);
        assert_eq!(
            TraceParent::parse(GOOD),
            Ok(TraceParent {
                trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
                parent_id: "00f067aa0ba902b7",
                flags: 1,
            })
        );
    }

    #[test]
    fn anything_else_is_a_bad_request() {
        let bad = [
            "",
            "garbage",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-+1",
        ];
        for text in bad {
            match TraceParent::parse(text) {
                Ok(parsed) => panic!("{text:?} parsed as {parsed:?}"),
                Err(e) => {
                    assert_eq!(e.code(), "bad_request", "{text:?}");
                    assert!(e.to_string().starts_with("traceparent must be"), "{e}");
                }
            }
        }
    }
}
