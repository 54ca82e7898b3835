//! The settings of one queue's pool, checked before the worker starts.

use std::time::Duration;

use spool_core::store::MAX_WAIT;
use spool_core::QueueName;
use tokio::sync::Semaphore;

use crate::error::StartError;

/// The settings of one queue's pool.
#[derive(Clone, Debug)]
pub struct QueueConfig {
    pub(crate) concurrency: usize,
    pub(crate) lease: Option<Duration>,
    pub(crate) rate_limit: Option<f64>,
    pub(crate) wait: Duration,
    pub(crate) idle_poll: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            concurrency: 10,
            lease: None,
            rate_limit: None,
            wait: Duration::from_secs(10),
            idle_poll: Duration::from_secs(1),
        }
    }
}

impl QueueConfig {
    /// The defaults: 10 runs at once, the queue's lease, no rate limit, 10 s
    /// long polls.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many runs at once; default 10.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// The lease to claim with; default the queue's (a task's own wins).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// At most this many runs start per second.
    pub fn rate_limit(mut self, per_second: f64) -> Self {
        self.rate_limit = Some(per_second);
        self
    }

    /// How long one claim waits for work (the long poll); default 10 s, at
    /// most 30 s. The store answers as soon as a task is ready.
    pub fn poll_wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// The pause after a claim that came back empty early (a store that
    /// cannot long-poll); default 1 s.
    pub fn idle_poll(mut self, every: Duration) -> Self {
        self.idle_poll = every;
        self
    }

    pub(crate) fn check(&self, queue: &QueueName) -> Result<(), StartError> {
        let bad = |reason: &str| {
            Err(StartError::BadConfig {
                queue: queue.clone(),
                reason: reason.to_string(),
            })
        };
        if self.concurrency == 0 || self.concurrency > Semaphore::MAX_PERMITS {
            return bad("concurrency must be at least 1");
        }
        if self.lease.is_some_and(|l| l.is_zero()) {
            return bad("the lease must be at least 1 ms");
        }
        if self.rate_limit.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            return bad("the rate limit must be a positive number of tasks per second");
        }
        if self.wait > MAX_WAIT {
            return bad("the poll wait must be at most 30 s");
        }
        if self.idle_poll.is_zero() {
            return bad("the idle poll must be longer than zero");
        }
        Ok(())
    }
}
