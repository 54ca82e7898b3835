//! JSON shapes shared by several endpoints: the task (docs/spec.md §7.1), payloads,
//! and the checks on timestamps and durations every input goes through.
//!
//! Request shapes that only one endpoint uses live beside its handler in
//! [`crate::api`].

mod batch;
mod input;
mod payload;
mod task;

pub use batch::at_most_max_batch;
pub use input::{duration_ms, non_zero_ms, timestamp};
pub use payload::{payload_in, payload_out, present_raw, PayloadIn};
pub use task::{task_json, StateName, TaskJson, TasksJson};
