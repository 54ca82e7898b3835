//! The rules every store applies when a task fails, expires or is claimed.
//!
//! Stores differ in how they keep tasks (a log and memory, or SQL rows); they
//! must not differ in what happens to a task. These pure functions are the
//! single statement of those rules.

use std::time::Duration;

use crate::task::ErrorRecord;
use crate::time::Timestamp;

/// How many failures a task remembers.
pub const MAX_ERRORS: usize = 5;
/// Longest stored error message, in bytes.
pub const MAX_ERROR_MESSAGE: usize = 4096;
/// The message recorded when a lease runs out.
pub const LEASE_EXPIRED: &str = "lease expired";

/// Cuts `message` to at most [`MAX_ERROR_MESSAGE`] bytes on a char boundary.
pub fn truncate_message(message: &str) -> &str {
    if message.len() <= MAX_ERROR_MESSAGE {
        return message;
    }
    let mut end = MAX_ERROR_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}

/// Appends a failure, keeping the last [`MAX_ERRORS`].
///
/// Every call records one: a failure just like the one before it (same
/// attempt, time and message, as after a retry within the same millisecond)
/// is a failure too. A store that may apply the same failure twice (the
/// engine replaying its log over a checkpoint) must tell that apart itself.
pub fn push_error(errors: &mut Vec<ErrorRecord>, attempt: u32, at: Timestamp, message: &str) {
    let message = truncate_message(message);
    errors.push(ErrorRecord {
        attempt,
        at,
        message: message.to_string(),
    });
    if errors.len() > MAX_ERRORS {
        let excess = errors.len() - MAX_ERRORS;
        errors.drain(..excess);
    }
}

/// What becomes of a task after a failure or an expired lease.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Next {
    /// Claimable again at this time (now or later).
    RetryAt(Timestamp),
    /// Out of attempts, or discarded.
    Dead,
}

/// After `fail`: dead when discarded or out of attempts, else retried at
/// `retry_at` if given, else after `backoff`.
pub fn after_failure(
    attempt: u32,
    max_attempts: u32,
    discard: bool,
    retry_at: Option<Timestamp>,
    now: Timestamp,
    backoff: Duration,
) -> Next {
    if discard || attempt >= max_attempts {
        Next::Dead
    } else {
        Next::RetryAt(retry_at.unwrap_or_else(|| now.plus(backoff)))
    }
}

/// After a lease expires: the attempt was already counted when it was
/// claimed, so the task is ready from the moment the lease ran out, unless
/// that was its last attempt.
pub fn after_lease_expiry(attempt: u32, max_attempts: u32, expired_at: Timestamp) -> Next {
    if attempt >= max_attempts {
        Next::Dead
    } else {
        Next::RetryAt(expired_at)
    }
}

/// The lease a claim grants: the task's own `lease_ms` wins, then what the
/// claim asked, then the queue's default.
pub fn lease_for(
    task_lease_ms: Option<u64>,
    requested: Option<Duration>,
    queue: Duration,
) -> Duration {
    task_lease_ms
        .map(Duration::from_millis)
        .or(requested)
        .unwrap_or(queue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_retries_until_attempts_run_out() {
        let now = Timestamp(1000);
        let b = Duration::from_secs(2);
        assert_eq!(
            after_failure(1, 3, false, None, now, b),
            Next::RetryAt(Timestamp(3000))
        );
        assert_eq!(
            after_failure(1, 3, false, Some(Timestamp(5)), now, b),
            Next::RetryAt(Timestamp(5))
        );
        assert_eq!(after_failure(3, 3, false, None, now, b), Next::Dead);
        assert_eq!(after_failure(1, 3, true, None, now, b), Next::Dead);
    }

    #[test]
    fn expiry_on_last_attempt_is_dead() {
        assert_eq!(
            after_lease_expiry(1, 2, Timestamp(7)),
            Next::RetryAt(Timestamp(7))
        );
        assert_eq!(after_lease_expiry(2, 2, Timestamp(7)), Next::Dead);
    }

    #[test]
    fn errors_keep_the_last_five() {
        let mut e = Vec::new();
        for a in 1..=7 {
            push_error(&mut e, a, Timestamp(a as i64), "boom");
        }
        assert_eq!(e.len(), MAX_ERRORS);
        assert_eq!(e[0].attempt, 3);
        assert_eq!(e[4].attempt, 7);
    }

    #[test]
    fn a_failure_like_the_last_one_is_recorded_too() {
        let mut e = Vec::new();
        push_error(&mut e, 1, Timestamp(7), "boom");
        push_error(&mut e, 1, Timestamp(7), "boom");
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let long = "é".repeat(3000);
        let cut = truncate_message(&long);
        assert!(cut.len() <= MAX_ERROR_MESSAGE);
        assert_eq!(cut.len(), MAX_ERROR_MESSAGE);
    }

    #[test]
    fn task_lease_wins() {
        let q = Duration::from_secs(30);
        assert_eq!(
            lease_for(Some(500), Some(Duration::from_secs(9)), q),
            Duration::from_millis(500)
        );
        assert_eq!(
            lease_for(None, Some(Duration::from_secs(9)), q),
            Duration::from_secs(9)
        );
        assert_eq!(lease_for(None, None, q), q);
    }
}
