//! Spool's core semantics, shared by every store and by the runtime.
//!
//! This crate holds what a task *is* and what may happen to it — the task
//! model ([`task`]), queue settings ([`settings`]) and
//! their claim limits ([`limits`]), the retry rules
//! ([`backoff`], [`transition`]), names ([`names`]), time ([`time`]), the
//! trace context a task carries ([`trace`]), the JSON shapes the server and
//! the client share ([`wire`]) — and the one seam every store implements:
//! the [`Store`] trait.
//!
//! It knows nothing of files, sockets, SQL or async runtimes: stores and the
//! runtime depend on it, never the other way round.

pub mod backoff;
mod crontab;
pub mod deps;
pub mod error;
pub mod groups;
pub mod lease_wait;
pub mod limits;
pub mod names;
pub mod outcome;
pub mod rfc3339;
pub mod schedule;
pub mod settings;
pub mod store;
pub mod task;
pub mod time;
pub mod trace;
pub mod transition;
pub mod wire;

pub use error::StoreError;
pub use groups::GroupStats;
pub use limits::{RateLimit, TokenBucket};
pub use names::{Kind, NameError, QueueName, TaskGroup, TaskKey};
pub use outcome::{Ack, TaskResult};
pub use schedule::{Cadence, Schedule, ScheduleSpec};
pub use settings::{QueueChange, QueueSettings};
pub use store::{
    ClaimRequest, EnqueueOutcome, FailRequest, KindCounts, ListOrder, ListRequest, QueueStats,
    StateCounts, Store, TaskPage, TaskPatch, TaskRef,
};
pub use task::{
    Dependencies, ErrorRecord, Lease, LeaseToken, NewTask, Parent, ParentFailure, Payload,
    PayloadFormat, Task, TaskId, TaskState,
};
pub use time::{Clock, ManualClock, SystemClock, Timestamp};
pub use trace::TraceParent;
