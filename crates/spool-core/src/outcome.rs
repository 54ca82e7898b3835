//! What an ack says about a run (docs/spec.md §3.2): done, done with a
//! result for the tasks waiting on this one, or to run again later.
//!
//! A [`TaskResult`] is valid JSON of at most [`MAX_RESULT`] bytes by
//! construction, so a store never checks one again; it is shared, not
//! copied, among the tasks it is handed to.

use std::fmt;
use std::sync::Arc;

use serde::de::IgnoredAny;

use crate::error::StoreError;
use crate::time::Timestamp;

/// The most bytes a result's JSON text may take.
pub const MAX_RESULT: usize = 4096;

/// A small JSON value an ack leaves for the tasks that wait for the acked
/// one: each of them reads it among its parents' results.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TaskResult(Arc<str>);

impl TaskResult {
    /// The result whose JSON text is `text`: `bad_request` unless it is
    /// valid JSON of at most [`MAX_RESULT`] bytes, and not `null`, which
    /// every interface reads as no result. The text is kept as given,
    /// whitespace included.
    pub fn from_json(text: &str) -> Result<Self, StoreError> {
        if text.len() > MAX_RESULT {
            return Err(StoreError::bad_request(format!(
                "a result of {} bytes exceeds the limit of {MAX_RESULT} bytes",
                text.len()
            )));
        }
        serde_json::from_str::<IgnoredAny>(text)
            .map_err(|e| StoreError::bad_request(format!("a result must be JSON: {e}")))?;
        if is_null(text) {
            return Err(StoreError::bad_request(
                "a result of null is no result: ack without one",
            ));
        }
        Ok(TaskResult(Arc::from(text)))
    }

    /// The result holding `value`, written compactly.
    pub fn new(value: &serde_json::Value) -> Result<Self, StoreError> {
        Self::from_json(&value.to_string())
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The JSON value.
    pub fn value(&self) -> serde_json::Value {
        // Valid JSON by construction; `Null` would only answer a text no
        // constructor accepts.
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }
}

/// Whether `json`, valid JSON, is `null`: the one value that is its own
/// text, whitespace aside.
pub fn is_null(json: &str) -> bool {
    json.trim() == "null"
}

impl fmt::Debug for TaskResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskResult({})", &*self.0)
    }
}

/// How an ack ends a run.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub enum Ack {
    /// Completed: the task is deleted, and the tasks waiting for it count
    /// it completed.
    #[default]
    Done,
    /// Completed, leaving this result to the tasks waiting for it. A task
    /// nobody waits for completes as with [`Ack::Done`]: a store keeps no
    /// completed tasks, and so no results of their own.
    Result(TaskResult),
    /// Not completed: re-armed as scheduled at this time with
    /// `attempt = 0`, as a periodic task does.
    Reschedule(Timestamp),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_result_is_json_within_the_limit() {
        let r = TaskResult::from_json(r#"{"rows": 3}"#).unwrap();
        assert_eq!(r.value()["rows"], 3);
        assert_eq!(
            TaskResult::new(&serde_json::json!([1, "a"]))
                .unwrap()
                .as_str(),
            r#"[1,"a"]"#
        );
        let big = format!("\"{}\"", "x".repeat(MAX_RESULT - 2));
        assert!(TaskResult::from_json(&big).is_ok());
        let over = format!("\"{}\"", "x".repeat(MAX_RESULT - 1));
        assert_eq!(
            TaskResult::from_json(&over).unwrap_err().code(),
            "bad_request"
        );
        for bad in ["", "{", "nope", "1 2", "null", " null "] {
            assert_eq!(
                TaskResult::from_json(bad).unwrap_err().code(),
                "bad_request",
                "{bad}"
            );
        }
    }
}
