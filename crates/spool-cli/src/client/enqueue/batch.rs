//! `spool enqueue QUEUE --batch FILE`: the tasks of a file, in one atomic
//! enqueue.
//!
//! FILE is the body the HTTP API's batch enqueue takes (`POST
//! /v1/queues/{queue}/tasks`, docs/spec.md §7): `{"tasks": [...]}`, each
//! task with the API's fields, `after_batch` naming earlier tasks of the
//! file by position (§3.2). It is read by the server crate's own reader
//! ([`spool_server::batch_tasks`]), so a file that works with curl works
//! here, and is checked whole before anything is sent, a bad task named by
//! its position (`tasks[3]: ...`). What only the server knows (which ids
//! exist, the queue's `max_payload`) it checks, and a batch it refuses
//! creates nothing.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use spool_core::NewTask;
use spool_server::BatchError;

/// Said after a file that does not parse, since the usual mistake is its
/// shape (a bare array, one task object).
const SHAPE: &str = "a batch file is the HTTP API's batch body: \
                     {\"tasks\": [{\"payload\": ...}, ...]}";

/// Reads FILE (`-`: stdin) into the tasks to enqueue, in its order.
pub(super) fn read(file: &Path) -> anyhow::Result<Vec<NewTask>> {
    let (bytes, name) = if file == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .context("cannot read the batch from stdin")?;
        (bytes, "on stdin".to_string())
    } else {
        let bytes = std::fs::read(file)
            .with_context(|| format!("cannot read the batch file {}", file.display()))?;
        (bytes, format!("file {}", file.display()))
    };
    parse(&bytes).with_context(|| format!("invalid batch {name}"))
}

fn parse(bytes: &[u8]) -> anyhow::Result<Vec<NewTask>> {
    spool_server::batch_tasks(bytes).map_err(|e| match e {
        // serde reads a bare array as the struct's fields in order, which
        // ends in "expected a sequence": say what it lacks.
        BatchError::Shape(_) if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') => {
            anyhow::anyhow!(
                "it is a bare JSON array: wrap it in {{\"tasks\": ...}}, the HTTP API's batch body"
            )
        }
        BatchError::Shape(e) => anyhow::anyhow!("{e} ({SHAPE})"),
        BatchError::Task(e) => e.into(),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use spool_core::task::RunAt;
    use spool_core::{Parent, ParentFailure, TaskGroup, TaskId};

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    const TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn members_and_a_callback_read_as_one_workflow() -> TestResult {
        let file = format!(
            r#"{{"tasks": [
                {{"payload": {{"n": 12345678901234567890}}, "traceparent": "{TRACE}"}},
                {{"kind": "resize", "key": "b", "group": "g", "delay_ms": 5,
                  "payload_base64": "AAE="}},
                {{"kind": "done", "after": [7], "after_batch": [1, 0],
                  "if_parent_fails": "run"}}
            ]}}"#
        );
        let tasks = parse(file.as_bytes())?;
        assert_eq!(tasks.len(), 3);
        assert_eq!(
            &tasks[0].payload.bytes[..],
            br#"{"n": 12345678901234567890}"#
        );
        assert_eq!(tasks[0].traceparent.as_deref(), Some(TRACE));
        assert_eq!(&tasks[1].payload.bytes[..], [0u8, 1]);
        assert_eq!(tasks[1].run_at, RunAt::After(Duration::from_millis(5)));
        assert_eq!(tasks[1].group.as_ref().map(TaskGroup::as_str), Some("g"));
        let callback = &tasks[2];
        assert_eq!(&callback.payload.bytes[..], b"null");
        assert_eq!(
            callback.after,
            [
                Parent::Task(TaskId(7)),
                Parent::InBatch(1),
                Parent::InBatch(0)
            ]
        );
        assert_eq!(callback.if_parent_fails, ParentFailure::Run);
        assert!(parse(br#"{"tasks": []}"#)?.is_empty());
        Ok(())
    }

    #[test]
    fn a_bad_batch_is_refused_with_its_reason() {
        let too_many = format!("{{\"tasks\": [{}{{}}]}}", "{},".repeat(10_000));
        let cases: [(&str, &str); 11] = [
            ("", "EOF while parsing"),
            (r#"{"tasks": [{}"#, "EOF while parsing"),
            (
                " \n[{\"payload\": 1}]",
                "bare JSON array: wrap it in {\"tasks\": ...}",
            ),
            (r#"{"payload": 1}"#, "unknown field `payload`"),
            (r#"{"tasks": [{"paylod": 1}]}"#, "unknown field `paylod`"),
            (
                r#"{"tasks": [{}, {"after_batch": [1]}]}"#,
                "task 1 of the batch waits for task 1",
            ),
            (r#"{"tasks": [{"traceparent": "x"}, {}]}"#, "tasks[0]: "),
            (
                r#"{"tasks": [{}, {"max_attempts": 0}]}"#,
                "tasks[1]: max_attempts must be",
            ),
            (r#"{"tasks": [{"run_at": "soon"}, {}]}"#, "tasks[0]: "),
            (
                r#"{"tasks": [{"run_at": "2026-01-01T00:00:00Z", "delay_ms": 1}]}"#,
                "exclusive",
            ),
            (&too_many, "10000"),
        ];
        for (file, reason) in cases {
            let refused = parse(file.as_bytes()).err().map(|e| e.to_string());
            assert!(
                refused.as_deref().is_some_and(|m| m.contains(reason)),
                "{file:.60}: {refused:?}"
            );
        }
    }

    #[test]
    fn a_bad_task_is_not_taken_for_a_file_of_the_wrong_shape() {
        let refused = parse(br#"{"tasks": [{"max_attempts": 0}]}"#)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(refused.contains("max_attempts must be"), "{refused}");
        assert!(!refused.contains(SHAPE), "{refused}");
    }
}
