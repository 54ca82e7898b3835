//! The task model (docs/spec.md §2).
//!
//! A [`Task`] is what a store hands out; a [`NewTask`] is what a producer
//! asks for. Completed tasks are deleted, so a `Task` is always work still to
//! do, or dead.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::names::{Kind, QueueName, TaskKey};
use crate::time::Timestamp;

/// A task's id: assigned by the store, unique forever, never reused.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct TaskId(pub u64);

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The secret that proves a worker holds a task's current lease.
///
/// Every claim draws a fresh token, so a worker whose lease expired and was
/// re-claimed can no longer ack, fail, release or extend (it is fenced out).
/// Shown as 16 hex digits; opaque to clients.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseToken(pub u64);

impl fmt::Display for LeaseToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for LeaseToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LeaseToken({self})")
    }
}

impl FromStr for LeaseToken {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        u64::from_str_radix(s, 16).map(LeaseToken)
    }
}

/// Where a task is in its life. Completed tasks have no state: they are gone.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// `run_at` is in the future.
    Scheduled,
    /// Claimable now.
    Ready,
    /// Claimed by a worker whose lease has not expired.
    Leased,
    /// Gave up: out of attempts or discarded. Kept until retried or cancelled.
    Dead,
}

impl TaskState {
    pub const ALL: [TaskState; 4] = [
        TaskState::Scheduled,
        TaskState::Ready,
        TaskState::Leased,
        TaskState::Dead,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Scheduled => "scheduled",
            TaskState::Ready => "ready",
            TaskState::Leased => "leased",
            TaskState::Dead => "dead",
        }
    }

    /// A dense index, for per-state counters.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaskState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        TaskState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                format!("unknown state {s:?}: expected scheduled, ready, leased or dead")
            })
    }
}

/// Exclusive, time-limited ownership of a claimed task.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Lease {
    pub owner: String,
    pub token: LeaseToken,
    pub expires_at: Timestamp,
}

/// One recorded failure.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ErrorRecord {
    pub attempt: u32,
    pub at: Timestamp,
    pub message: String,
}

/// How a payload was given, so it comes back the same way (docs/spec.md §7).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum PayloadFormat {
    /// UTF-8 JSON text.
    Json,
    /// Opaque bytes.
    #[default]
    Binary,
}

/// A task's payload: opaque bytes plus the format they were given in.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Payload {
    pub format: PayloadFormat,
    pub bytes: Bytes,
}

impl Payload {
    pub fn binary(bytes: impl Into<Bytes>) -> Self {
        Payload {
            format: PayloadFormat::Binary,
            bytes: bytes.into(),
        }
    }

    /// JSON text. The caller vouches that it is valid JSON.
    pub fn json(text: impl Into<Bytes>) -> Self {
        Payload {
            format: PayloadFormat::Json,
            bytes: text.into(),
        }
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// A task as a store reports it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Task {
    pub id: TaskId,
    pub queue: QueueName,
    pub kind: Kind,
    pub payload: Payload,
    pub priority: i16,
    pub run_at: Timestamp,
    pub key: Option<TaskKey>,
    /// How many times it has been claimed.
    pub attempt: u32,
    pub max_attempts: u32,
    /// The task's own lease (time-to-run); wins over what a claim asks.
    pub lease_ms: Option<u64>,
    pub state: TaskState,
    pub lease: Option<Lease>,
    /// The last failures, oldest first (at most [`crate::transition::MAX_ERRORS`]).
    pub errors: Vec<ErrorRecord>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// When a new task becomes claimable.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum RunAt {
    #[default]
    Now,
    At(Timestamp),
    /// Relative to the store's clock at enqueue.
    After(Duration),
}

/// What a producer asks to enqueue.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct NewTask {
    /// Defaults to the queue's name.
    pub kind: Option<Kind>,
    pub payload: Payload,
    pub priority: i16,
    pub run_at: RunAt,
    pub key: Option<TaskKey>,
    /// Defaults to the queue's `max_attempts`.
    pub max_attempts: Option<u32>,
    pub lease_ms: Option<u64>,
}

impl NewTask {
    pub fn new(payload: Payload) -> Self {
        NewTask {
            payload,
            ..NewTask::default()
        }
    }

    pub fn kind(mut self, kind: Kind) -> Self {
        self.kind = Some(kind);
        self
    }

    pub fn priority(mut self, priority: i16) -> Self {
        self.priority = priority;
        self
    }

    pub fn run_at(mut self, at: Timestamp) -> Self {
        self.run_at = RunAt::At(at);
        self
    }

    pub fn delay(mut self, d: Duration) -> Self {
        self.run_at = RunAt::After(d);
        self
    }

    pub fn key(mut self, key: TaskKey) -> Self {
        self.key = Some(key);
        self
    }

    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }

    pub fn lease_ms(mut self, ms: u64) -> Self {
        self.lease_ms = Some(ms);
        self
    }

    /// The checks a task passes whatever its queue: out-of-range values are
    /// refused, never clamped (docs/spec.md §7.1). Its payload's size is
    /// checked against its queue's `max_payload` by the store.
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.max_attempts == Some(0) {
            return Err(StoreError::bad_request("max_attempts must be at least 1"));
        }
        if self.lease_ms == Some(0) {
            return Err(StoreError::bad_request("lease_ms must be at least 1"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_as_hex() {
        let t = LeaseToken(0xdead_beef);
        assert_eq!(t.to_string(), "00000000deadbeef");
        assert_eq!("00000000deadbeef".parse::<LeaseToken>(), Ok(t));
        assert!("zz".parse::<LeaseToken>().is_err());
    }

    #[test]
    fn states_parse_from_their_names() {
        for s in TaskState::ALL {
            assert_eq!(s.as_str().parse::<TaskState>(), Ok(s));
        }
        assert!("done".parse::<TaskState>().is_err());
    }

    #[test]
    fn zero_attempts_and_zero_leases_are_refused() {
        let ok = NewTask::default().max_attempts(1).lease_ms(1);
        assert_eq!(ok.validate(), Ok(()));
        for bad in [ok.clone().max_attempts(0), ok.lease_ms(0)] {
            assert_eq!(bad.validate().map_err(|e| e.code()), Err("bad_request"));
        }
    }
}
