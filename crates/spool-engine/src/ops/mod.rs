//! The engine's log records: every change to state is one [`Op`].
//!
//! Ops state absolute values (the new attempt, the new run_at, the lease's
//! expiry, which of its failures a task records), never deltas, so applying
//! one twice leaves the same state. That
//! is what lets a checkpoint be copied while writes continue: replaying the
//! log from where the copy began re-applies ops the copy may already hold.
//!
//! The live path builds an `Op`, encodes it into the open group-commit batch
//! and applies it; recovery decodes and applies the same `Op`. One apply
//! function for both is what keeps memory and disk in agreement.
//!
//! This module holds the ops themselves; `encode` and `decode` turn them
//! into record bodies and back, `fields` and `settings` lay out the fields
//! they share with checkpoints.

mod decode;
mod encode;
mod fields;
mod settings;
#[cfg(test)]
mod tests;

pub(crate) use fields::{
    put_deps, put_opt_u64, put_results, put_ts, read_deps, read_name, read_opt, read_opt_u64,
    read_results, read_traceparent, ts,
};
pub(crate) use settings::{put_schedule_spec, put_settings, read_schedule_spec, read_settings};

use std::sync::Arc;

use spool_core::deps::Outcome;
use spool_core::{
    Dependencies, Kind, Payload, QueueName, QueueSettings, ScheduleSpec, TaskGroup, TaskKey,
    TaskPatch, TaskResult, Timestamp,
};
use spool_wal::LogPos;

/// Record kinds in the log (0 is the log's own batch marker).
pub(crate) mod kind {
    pub(crate) const ENQUEUE: u8 = 1;
    pub(crate) const CLAIM: u8 = 2;
    pub(crate) const SETTLE: u8 = 3;
    pub(crate) const EXTEND: u8 = 4;
    pub(crate) const UPDATE: u8 = 5;
    pub(crate) const DELETE: u8 = 6;
    pub(crate) const PUT_QUEUE: u8 = 7;
    pub(crate) const PUT_SCHEDULE: u8 = 8;
    pub(crate) const DELETE_SCHEDULE: u8 = 9;
    pub(crate) const FIRE: u8 = 10;
    pub(crate) const MOVE: u8 = 11;
}

#[derive(Debug, Clone)]
pub(crate) struct NewEntry {
    pub id: u64,
    pub kind: Kind,
    pub payload: Payload,
    pub priority: i16,
    pub run_at: Timestamp,
    pub key: Option<TaskKey>,
    pub max_attempts: u32,
    pub lease_ms: Option<u64>,
    /// A W3C traceparent, valid: checked at enqueue and again when read.
    pub traceparent: Option<String>,
    pub group: Option<TaskGroup>,
    /// What it waits for, as worked out at enqueue (docs/spec.md §3.2).
    pub deps: Option<Box<NewDeps>>,
}

/// A new task's dependencies as the enqueue found them: which parents it
/// still waits for, and whether a failed one already cancelled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewDeps {
    pub deps: Dependencies,
    /// Created and cancelled in the same write: its policy is `cancel` and
    /// a parent had failed by then.
    pub cancelled: bool,
}

/// What one parent's ending did to one task waiting for it, worked out
/// when the ending was committed and logged with it, in the same record:
/// absolute (the parent struck from the task's waits, its failure count
/// as it then stood), so replaying it over a checkpoint that already holds
/// it changes nothing, and never read from the parent's record, which a
/// checkpoint may hold from before or after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Follow {
    pub task: u64,
    pub parent: u64,
    /// The task's count of failed parents afterwards.
    pub failed: u32,
    pub outcome: Outcome,
}

#[derive(Debug, Clone)]
pub(crate) struct Claimed {
    pub id: u64,
    pub attempt: u32,
    pub token: u64,
    pub expires_at: Timestamp,
}

/// A settled task's error field: a failure as Spool wrote it before
/// failures were numbered (attempt, message), and as it writes it now
/// (attempt, number, message).
pub(super) const ERROR_UNNUMBERED: u8 = 1;
pub(super) const ERROR_NUMBERED: u8 = 2;

/// Where a settled task goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Scheduled at this time, or ready if it has passed.
    Waiting(Timestamp),
    Dead,
}

/// A leased or dead task leaves its lease: failed, expired, released,
/// snoozed, rescheduled or retried.
#[derive(Debug, Clone)]
pub(crate) struct Settlement {
    pub id: u64,
    /// The task's attempt count afterwards.
    pub attempt: u32,
    pub next: Next,
    pub error: Option<Failure>,
}

/// A failure to record in a settled task's errors.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    /// The attempt that failed.
    pub attempt: u32,
    /// Which of the task's failures this is, counting from 1: what keeps
    /// the append absolute. Replaying the op over a checkpoint that already
    /// holds it finds the task counting this failure already and records
    /// nothing, while a failure just like the one before (same attempt,
    /// time and message, after a retry) is still a new one. `None` in
    /// records written before Spool numbered failures.
    pub number: Option<u64>,
    pub message: String,
}

/// A live payload copied out of a mostly dead segment by compaction.
#[derive(Debug, Clone)]
pub(crate) struct Moved {
    pub id: u64,
    /// Where the task pointed when the payload was read.
    pub from: LogPos,
    pub payload: Payload,
}

#[derive(Debug, Clone)]
pub(crate) enum Op {
    Enqueue {
        now: Timestamp,
        queue: QueueName,
        tasks: Vec<NewEntry>,
    },
    Claim {
        now: Timestamp,
        owner: Arc<str>,
        tasks: Vec<Claimed>,
    },
    Settle {
        now: Timestamp,
        tasks: Vec<Settlement>,
        /// What the tasks that went dead did to the tasks waiting for them.
        follow: Vec<Follow>,
    },
    Extend {
        now: Timestamp,
        id: u64,
        expires_at: Timestamp,
    },
    Update {
        now: Timestamp,
        id: u64,
        patch: TaskPatch,
    },
    /// Tasks completed (acked) or cancelled.
    Delete {
        now: Timestamp,
        ids: Vec<u64>,
        /// What their ending did to the tasks waiting for them.
        follow: Vec<Follow>,
        /// The results acks gave, of tasks that others wait for: each is
        /// logged once, however many tasks receive it.
        results: Vec<(u64, TaskResult)>,
    },
    PutQueue {
        queue: QueueName,
        settings: QueueSettings,
    },
    PutSchedule {
        now: Timestamp,
        spec: ScheduleSpec,
    },
    DeleteSchedule {
        name: Kind,
    },
    /// Compaction: payloads written again at the log's end, each task moved
    /// to its copy if it still points at the old one. The old segment is
    /// then unused and reclaimed like any other.
    Move {
        moves: Vec<Moved>,
    },
    /// A schedule's tick fired: the tick is recorded and, unless its key
    /// was still deduplicating, its task enqueued — in one record, so a
    /// torn tail never keeps one without the other.
    Fire {
        now: Timestamp,
        name: Kind,
        tick: Timestamp,
        queue: QueueName,
        task: Option<NewEntry>,
    },
}

/// Where a task payload's bytes lie inside an encoded record body. The log
/// keeps them there: the task's locator is the record's position plus this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// Where the payload's u32 length prefix starts.
    pub offset: u32,
}

impl Op {
    pub(crate) fn kind(&self) -> u8 {
        match self {
            Op::Enqueue { .. } => kind::ENQUEUE,
            Op::Claim { .. } => kind::CLAIM,
            Op::Settle { .. } => kind::SETTLE,
            Op::Extend { .. } => kind::EXTEND,
            Op::Update { .. } => kind::UPDATE,
            Op::Delete { .. } => kind::DELETE,
            Op::PutQueue { .. } => kind::PUT_QUEUE,
            Op::PutSchedule { .. } => kind::PUT_SCHEDULE,
            Op::DeleteSchedule { .. } => kind::DELETE_SCHEDULE,
            Op::Fire { .. } => kind::FIRE,
            Op::Move { .. } => kind::MOVE,
        }
    }
}
