//! JSON shapes shared by several endpoints: the task (SPEC §7.1), payloads,
//! and the checks on timestamps and durations every input goes through.
//!
//! Request shapes that only one endpoint uses live beside its handler in
//! [`crate::api`].

mod input;
mod payload;
mod task;

pub use input::{duration_ms, non_zero_ms, timestamp};
pub use payload::{payload_in, payload_out, present_raw, PayloadIn};
pub use task::{task_json, StateName, TaskJson, TasksJson};
