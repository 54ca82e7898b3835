//! For unit tests: a state holding one task, as its enqueue left it.
#![allow(clippy::unwrap_used)]

use spool_core::{Kind, Payload, QueueName, TaskGroup, Timestamp};
use spool_wal::LogPos;

use super::{PayloadRef, State};
use crate::ops::{NewEntry, Op};

impl State {
    /// Task `id` of queue `q`, kind `k`, enqueued at `at` with `traceparent`
    /// and `group`, its payload at a made-up place in the log.
    pub(crate) fn with_one_task(
        id: u64,
        at: Timestamp,
        traceparent: Option<&str>,
        group: Option<&str>,
    ) -> State {
        let mut state = State::new();
        let enqueue = Op::Enqueue {
            now: at,
            queue: QueueName::new("q").unwrap(),
            tasks: vec![NewEntry {
                id,
                kind: Kind::new("k").unwrap(),
                payload: Payload::binary(vec![1]),
                priority: 0,
                run_at: at,
                key: None,
                max_attempts: 10,
                lease_ms: None,
                traceparent: traceparent.map(str::to_string),
                group: group.map(|g| TaskGroup::new(g).unwrap()),
                deps: None,
            }],
        };
        state.apply(&enqueue, &[PayloadRef::new(LogPos { seq: 1, offset: 64 })]);
        state
    }
}
