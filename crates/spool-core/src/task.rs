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
use crate::names::{Kind, QueueName, TaskGroup, TaskKey};
use crate::outcome::TaskResult;
use crate::time::Timestamp;
use crate::trace::TraceParent;

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
    /// Waits for the tasks it names in `after` to end (docs/spec.md §3.2).
    Pending,
}

impl TaskState {
    /// Every state, in the order of [`TaskState::index`].
    /// `Pending` came last so that the indexes of the others, which the
    /// engine's checkpoints hold, kept their values.
    pub const ALL: [TaskState; 5] = [
        TaskState::Scheduled,
        TaskState::Ready,
        TaskState::Leased,
        TaskState::Dead,
        TaskState::Pending,
    ];

    /// The snake_case name JSON and the CLI use; [`FromStr`] parses it back.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Scheduled => "scheduled",
            TaskState::Ready => "ready",
            TaskState::Leased => "leased",
            TaskState::Dead => "dead",
            TaskState::Pending => "pending",
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
                format!("unknown state {s:?}: expected scheduled, ready, leased, dead or pending")
            })
    }
}

/// Exclusive, time-limited ownership of a claimed task.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Lease {
    /// The worker id the claim named (1–256 bytes).
    pub owner: String,
    /// What ack, fail, release, snooze and extend must present; fresh on
    /// every claim.
    pub token: LeaseToken,
    /// When the lease runs out, by the store's clock: from then on the task
    /// is ready again, or dead when it is out of attempts.
    pub expires_at: Timestamp,
}

/// One recorded failure.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ErrorRecord {
    /// The attempt that failed: the task's `attempt` when it failed.
    pub attempt: u32,
    /// When the failure was recorded, by the store's clock.
    pub at: Timestamp,
    /// What went wrong, cut to [`MAX_ERROR_MESSAGE`] bytes on a character
    /// boundary; [`LEASE_EXPIRED`] for a lease that ran out.
    ///
    /// [`MAX_ERROR_MESSAGE`]: crate::transition::MAX_ERROR_MESSAGE
    /// [`LEASE_EXPIRED`]: crate::transition::LEASE_EXPIRED
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
    /// How the bytes were given, so they come back the same way.
    pub format: PayloadFormat,
    /// The payload itself, opaque to Spool; at most the queue's
    /// `max_payload` bytes.
    pub bytes: Bytes,
}

impl Payload {
    /// Opaque bytes, handed back as bytes.
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

    /// The size in bytes, the figure held against the queue's `max_payload`.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the payload has no bytes at all (a task may carry none).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// A task as a store reports it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Task {
    /// Assigned by the store at enqueue; increasing in enqueue order.
    pub id: TaskId,
    /// The queue it was enqueued to; a task never changes queues.
    pub queue: QueueName,
    /// Which handler runs it: the queue's name unless the producer chose one.
    pub kind: Kind,
    /// What the handler gets, in the format it was given in.
    pub payload: Payload,
    /// Lower runs first: claims take tasks in (priority, run_at, id) order.
    pub priority: i16,
    /// Not claimable before this time, by the store's clock; after a failure,
    /// when the retry is due.
    pub run_at: Timestamp,
    /// The idempotency key, unique in the queue while the task lives and for
    /// the queue's dedup window after (docs/spec.md §3.1).
    pub key: Option<TaskKey>,
    /// How many times it has been claimed.
    pub attempt: u32,
    /// When this attempt fails or its lease runs out, the task is dead; fixed
    /// at enqueue, from the task or else its queue.
    pub max_attempts: u32,
    /// The task's own lease (time-to-run); wins over what a claim asks.
    pub lease_ms: Option<u64>,
    /// The state when the store answered, derived from its clock: an expired
    /// lease already shows as ready or dead.
    pub state: TaskState,
    /// Who holds the task and until when; `Some` only while it is leased.
    pub lease: Option<Lease>,
    /// The last failures, oldest first (at most [`crate::transition::MAX_ERRORS`]).
    pub errors: Vec<ErrorRecord>,
    /// When it was enqueued, by the store's clock.
    pub created_at: Timestamp,
    /// When a store last changed it, by the store's clock.
    pub updated_at: Timestamp,
    /// The W3C `traceparent` given at enqueue, kept as given: the trace
    /// every run of the task joins (docs/spec.md §2, §6).
    pub traceparent: Option<String>,
    /// The group given at enqueue: claims take from a queue's groups in
    /// turn, and its `group_concurrency` bounds each group's leases
    /// (docs/spec.md §4).
    pub group: Option<TaskGroup>,
    /// What the task waits for, if anything (docs/spec.md §3.2).
    pub deps: Option<Box<Dependencies>>,
}

/// What becomes of a pending task when a task it waits for ends dead or
/// cancelled (docs/spec.md §3.2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ParentFailure {
    /// It is cancelled too, and so are the tasks waiting for it.
    #[default]
    Cancel,
    /// It runs anyway, once every task it waits for has ended.
    Run,
}

impl ParentFailure {
    /// The snake_case name JSON and the CLI use.
    pub fn as_str(self) -> &'static str {
        match self {
            ParentFailure::Cancel => "cancel",
            ParentFailure::Run => "run",
        }
    }
}

impl FromStr for ParentFailure {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cancel" => Ok(ParentFailure::Cancel),
            "run" => Ok(ParentFailure::Run),
            _ => Err(format!("unknown policy {s:?}: expected cancel or run")),
        }
    }
}

/// A task's dependencies: the tasks it waits for and how they ended so
/// far (docs/spec.md §3.2).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Dependencies {
    /// The tasks named at enqueue, in the order given, duplicates removed.
    pub after: Vec<TaskId>,
    /// Those that have not ended yet, ascending: while any is left the
    /// task is `pending`.
    pub waiting_on: Vec<TaskId>,
    /// How many of them ended dead or cancelled; the others that ended
    /// completed.
    pub failed: u32,
    /// What a dead or cancelled one does to this task.
    pub if_parent_fails: ParentFailure,
    /// The results of those that completed with one, by parent id
    /// ascending.
    pub results: Vec<(TaskId, TaskResult)>,
}

impl Dependencies {
    /// How many of the tasks waited for ended completed so far.
    pub fn completed(&self) -> u32 {
        (self.after.len() - self.waiting_on.len()) as u32 - self.failed
    }
}

/// A task a new task waits for.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Parent {
    /// A task the store already holds (or held: see docs/spec.md §3.2).
    Task(TaskId),
    /// The task at this position of the same enqueue batch, which must come
    /// before the one naming it.
    InBatch(u32),
}

/// Most tasks one task may wait for.
pub const MAX_AFTER: usize = 10_000;

/// When a new task becomes claimable.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum RunAt {
    /// Claimable at once: the store's clock at enqueue.
    #[default]
    Now,
    /// Claimable from this time; a time already past means at once.
    At(Timestamp),
    /// Relative to the store's clock at enqueue.
    After(Duration),
}

/// What a producer asks to enqueue.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct NewTask {
    /// Defaults to the queue's name.
    pub kind: Option<Kind>,
    /// What the handler gets; at most the queue's `max_payload` bytes.
    pub payload: Payload,
    /// Lower runs first; 0 unless set.
    pub priority: i16,
    /// When the task becomes claimable; now unless set.
    pub run_at: RunAt,
    /// An idempotency key: while a task with it lives in the queue, or within
    /// the dedup window after, the enqueue creates nothing (docs/spec.md §3.1).
    pub key: Option<TaskKey>,
    /// Defaults to the queue's `max_attempts`.
    pub max_attempts: Option<u32>,
    /// The task's own lease in milliseconds (at least 1), which wins over
    /// what every claim asks; unset, the claim or the queue decides.
    pub lease_ms: Option<u64>,
    /// The producer's trace context as a W3C `traceparent`, which the
    /// task's runs join; [`NewTask::validate`] refuses any other text.
    pub traceparent: Option<String>,
    /// The group the task belongs to in its queue (a customer, an API
    /// host), for per-group concurrency and fair claims; fixed at enqueue.
    pub group: Option<TaskGroup>,
    /// The tasks it waits for: it is `pending` until every one has ended
    /// (docs/spec.md §3.2). At most [`MAX_AFTER`].
    pub after: Vec<Parent>,
    /// What a dead or cancelled parent does to it.
    pub if_parent_fails: ParentFailure,
}

impl NewTask {
    /// A task carrying `payload`, every other field at its default.
    pub fn new(payload: Payload) -> Self {
        NewTask {
            payload,
            ..NewTask::default()
        }
    }

    /// Sets the handler name; without it, the queue's name.
    pub fn kind(mut self, kind: Kind) -> Self {
        self.kind = Some(kind);
        self
    }

    /// Sets the priority; lower runs first.
    pub fn priority(mut self, priority: i16) -> Self {
        self.priority = priority;
        self
    }

    /// Makes the task claimable from `at`, by the store's clock.
    pub fn run_at(mut self, at: Timestamp) -> Self {
        self.run_at = RunAt::At(at);
        self
    }

    /// Makes the task claimable `d` after the store's clock at enqueue.
    pub fn delay(mut self, d: Duration) -> Self {
        self.run_at = RunAt::After(d);
        self
    }

    /// Sets an idempotency key (docs/spec.md §3.1).
    pub fn key(mut self, key: TaskKey) -> Self {
        self.key = Some(key);
        self
    }

    /// Sets how many attempts the task gets before a failure makes it dead;
    /// 0 is refused by [`NewTask::validate`].
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }

    /// Gives the task its own lease, in milliseconds, which wins over what
    /// claims ask; 0 is refused by [`NewTask::validate`].
    pub fn lease_ms(mut self, ms: u64) -> Self {
        self.lease_ms = Some(ms);
        self
    }

    /// Carries the producer's trace context, a W3C `traceparent`
    /// (`00-<trace id>-<parent id>-<flags>`), to the task's runs; anything
    /// else is refused by [`NewTask::validate`].
    pub fn traceparent(mut self, traceparent: impl Into<String>) -> Self {
        self.traceparent = Some(traceparent.into());
        self
    }

    /// Puts the task in a group of its queue (docs/spec.md §4).
    pub fn group(mut self, group: TaskGroup) -> Self {
        self.group = Some(group);
        self
    }

    /// Makes the task wait for `parent` to end (docs/spec.md §3.2).
    pub fn after(mut self, parent: Parent) -> Self {
        self.after.push(parent);
        self
    }

    /// Says what a dead or cancelled parent does to the task.
    pub fn if_parent_fails(mut self, policy: ParentFailure) -> Self {
        self.if_parent_fails = policy;
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
        if let Some(text) = &self.traceparent {
            TraceParent::parse(text)?;
        }
        if self.after.len() > MAX_AFTER {
            return Err(StoreError::bad_request(format!(
                "after names at most {MAX_AFTER} tasks"
            )));
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
    fn zero_attempts_zero_leases_and_bad_traceparents_are_refused() {
        let ok = NewTask::default()
            .max_attempts(1)
            .lease_ms(1)
            .traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert_eq!(ok.validate(), Ok(()));
        for bad in [
            ok.clone().max_attempts(0),
            ok.clone().lease_ms(0),
            ok.clone().traceparent("00-0-0-00"),
        ] {
            assert_eq!(bad.validate().map_err(|e| e.code()), Err("bad_request"));
        }
    }
}
