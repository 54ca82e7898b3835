//! The errors every store returns, with stable codes (docs/spec.md §7).
//!
//! The code strings are API: clients match on them, so they never change.

use crate::names::{NameError, QueueName};

/// An operation's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The task never existed or is gone (completed, cancelled).
    #[error("task not found")]
    NotFound,
    /// The queue does not exist (and the store does not create queues on demand).
    #[error("queue {0} not found")]
    QueueNotFound(QueueName),
    /// The token is not the task's current lease token.
    #[error("lease lost: the token is not the task's current lease")]
    LeaseLost,
    /// The task is leased, so it cannot be changed.
    #[error("the task is leased by a worker and cannot be changed")]
    LeaseHeld,
    /// The request is malformed or out of range.
    #[error("{0}")]
    BadRequest(String),
    /// The payload is larger than the queue's `max_payload`; sizes in bytes.
    #[error("payload of {size} bytes exceeds the queue's max_payload of {max} bytes")]
    PayloadTooLarge {
        /// The payload's size.
        size: u64,
        /// The queue's `max_payload` at the time.
        max: u64,
    },
    /// The store cannot serve now (down, stopped after an I/O failure, shut down).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// A bug or an unexpected condition; never the client's fault.
    #[error("internal error: {0}")]
    Internal(String),
}

impl StoreError {
    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::NotFound | StoreError::QueueNotFound(_) => "not_found",
            StoreError::LeaseLost => "lease_lost",
            StoreError::LeaseHeld => "lease_held",
            StoreError::BadRequest(_) => "bad_request",
            StoreError::PayloadTooLarge { .. } => "payload_too_large",
            StoreError::Unavailable(_) => "unavailable",
            StoreError::Internal(_) => "internal",
        }
    }

    /// A [`StoreError::BadRequest`] whose message tells the caller what to fix.
    pub fn bad_request(message: impl Into<String>) -> Self {
        StoreError::BadRequest(message.into())
    }
}

impl From<NameError> for StoreError {
    fn from(e: NameError) -> Self {
        StoreError::BadRequest(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() -> Result<(), NameError> {
        let queue = QueueName::new("q")?;
        let cases = [
            (StoreError::NotFound, "not_found"),
            (StoreError::QueueNotFound(queue), "not_found"),
            (StoreError::LeaseLost, "lease_lost"),
            (StoreError::LeaseHeld, "lease_held"),
            (StoreError::bad_request("x"), "bad_request"),
            (
                StoreError::PayloadTooLarge { size: 2, max: 1 },
                "payload_too_large",
            ),
            (StoreError::Unavailable("x".into()), "unavailable"),
            (StoreError::Internal("x".into()), "internal"),
        ];
        for (error, code) in &cases {
            // No wildcard arm: a new variant does not compile until it is
            // named here, the reminder to give it a case above.
            match error {
                StoreError::NotFound
                | StoreError::QueueNotFound(_)
                | StoreError::LeaseLost
                | StoreError::LeaseHeld
                | StoreError::BadRequest(_)
                | StoreError::PayloadTooLarge { .. }
                | StoreError::Unavailable(_)
                | StoreError::Internal(_) => {}
            }
            assert_eq!(error.code(), *code, "{error:?}");
        }
        Ok(())
    }
}
