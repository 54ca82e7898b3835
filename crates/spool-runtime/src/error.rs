//! The runtime's errors: what a handler returns ([`TaskError`]), and why an
//! enqueue ([`EnqueueError`]) or a start ([`StartError`]) failed.

use std::fmt;
use std::time::Duration;

use spool_core::{Kind, NameError, QueueName, StoreError};

/// Any error a handler may wrap.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a run did not succeed, and what the runtime should do about it.
///
/// `?` turns any error into a retryable failure (retried with backoff until
/// the attempts run out). [`TaskError::permanent`] makes the task dead at
/// once; [`TaskError::snooze`] gives it back for later without counting the
/// attempt. Like `anyhow::Error`, it is not itself a `std::error::Error`,
/// which is what lets `?` convert every error into it.
#[derive(Debug)]
pub struct TaskError {
    pub(crate) action: Action,
}

#[derive(Debug)]
pub(crate) enum Action {
    Retry {
        error: BoxError,
        after: Option<Duration>,
    },
    Permanent(BoxError),
    Snooze(Duration),
}

impl TaskError {
    /// Retried after the backoff of the handler's [`crate::RetryPolicy`].
    pub fn retry(error: impl Into<BoxError>) -> Self {
        TaskError {
            action: Action::Retry {
                error: error.into(),
                after: None,
            },
        }
    }

    /// Retried after `after`, whatever the backoff says (a rate-limited API
    /// that said when to come back).
    pub fn retry_after(error: impl Into<BoxError>, after: Duration) -> Self {
        TaskError {
            action: Action::Retry {
                error: error.into(),
                after: Some(after),
            },
        }
    }

    /// Dead at once: retrying cannot help (a malformed address, a refusal).
    pub fn permanent(error: impl Into<BoxError>) -> Self {
        TaskError {
            action: Action::Permanent(error.into()),
        }
    }

    /// Not a failure: run again after `delay`, and this attempt does not
    /// count.
    pub fn snooze(delay: Duration) -> Self {
        TaskError {
            action: Action::Snooze(delay),
        }
    }

    /// Whether the task goes dead at once, attempts left or not.
    pub fn is_permanent(&self) -> bool {
        matches!(self.action, Action::Permanent(_))
    }

    /// Whether this is a snooze: given back for later, the attempt not
    /// counted.
    pub fn is_snooze(&self) -> bool {
        matches!(self.action, Action::Snooze(_))
    }
}

/// An error and its sources, joined with ": ", as the store records it.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.action {
            Action::Retry { error, .. } | Action::Permanent(error) => {
                f.write_str(&chain(error.as_ref()))
            }
            Action::Snooze(d) => write!(f, "snoozed for {d:?}"),
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for TaskError {
    fn from(error: E) -> Self {
        TaskError::retry(error)
    }
}

/// `result.permanent()?` and `result.retry_after(d)?` on any `Result`.
pub trait TaskResultExt<T> {
    /// An error here makes the task dead at once.
    fn permanent(self) -> Result<T, TaskError>;
    /// An error here retries the task after `after`.
    fn retry_after(self, after: Duration) -> Result<T, TaskError>;
}

impl<T, E: Into<BoxError>> TaskResultExt<T> for Result<T, E> {
    fn permanent(self) -> Result<T, TaskError> {
        self.map_err(TaskError::permanent)
    }

    fn retry_after(self, after: Duration) -> Result<T, TaskError> {
        self.map_err(|e| TaskError::retry_after(e, after))
    }
}

/// Why a job could not be enqueued, a schedule set, a task cancelled or a
/// queue changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnqueueError {
    /// The job did not serialize to JSON.
    #[error("cannot encode the payload as JSON: {0}")]
    Encode(#[from] serde_json::Error),
    /// A queue, kind, key, group or schedule name is not valid.
    #[error(transparent)]
    Name(#[from] NameError),
    /// A task of a [`crate::Batch`] cannot be enqueued as given: it waits
    /// for a position that is not before its own, or its job goes to
    /// another queue than the batch's first. Nothing was sent.
    #[error("task {position} of the batch: {reason}")]
    Batch {
        /// The task's position in the batch, counting from 0.
        position: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// What the store answered.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a worker or a scheduler could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A job's `QUEUE` or `KIND`, or a configured queue, is not a valid name.
    #[error(transparent)]
    Name(#[from] NameError),
    /// Two handlers for one kind of one queue: which should run is unclear.
    #[error("kind {kind} of queue {queue} is registered twice")]
    DuplicateKind {
        /// The queue both handlers were registered on.
        queue: QueueName,
        /// The kind both claim.
        kind: Kind,
    },
    /// A queue's settings cannot work (no concurrency, a zero lease, ...).
    #[error("queue {queue}: {reason}")]
    BadConfig {
        /// The queue whose [`crate::QueueConfig`] was refused.
        queue: QueueName,
        /// Which setting is out of range.
        reason: String,
    },
    /// The worker id is empty or longer than 256 bytes.
    #[error("the worker id must be 1 to 256 bytes")]
    BadWorkerId,
    /// A worker with no handler would claim nothing.
    #[error("no handler is registered: a worker needs at least one")]
    NoHandlers,
    /// `start` was called outside a Tokio runtime, which must run the loops.
    #[error("start must be called from within a Tokio runtime")]
    NoRuntime,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn messages_carry_the_source_chain() {
        let e: TaskError = Outer(std::io::Error::other("disk full")).into();
        assert_eq!(e.to_string(), "outer: disk full");
        assert!(!e.is_permanent());
        let r: Result<(), &str> = Err("bad address");
        let e = r.permanent().err();
        assert!(e.as_ref().is_some_and(TaskError::is_permanent));
        assert_eq!(e.map(|e| e.to_string()), Some("bad address".into()));
        assert!(TaskError::snooze(Duration::from_secs(1)).is_snooze());
    }
}
