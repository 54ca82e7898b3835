//! JSON shapes shared by several endpoints: the task (docs/spec.md §7.1), payloads,
//! and the checks on timestamps and durations every input goes through.
//!
//! Request shapes that only one endpoint uses live beside its handler in
//! [`crate::api`].

mod batch;
mod input;
mod payload;
mod task;

pub(crate) use batch::at_most_max_batch;
pub(crate) use input::{duration_ms, non_zero_ms, timestamp};
pub(crate) use payload::{payload_in, payload_out, present_raw, PayloadIn};
pub(crate) use task::{task_json, StateName, TaskJson, TasksJson};
