//! Handlers: what runs a kind of task.
//!
//! A handler is an async function `async fn(Context, J) -> Result<(),
//! TaskError>` (closures too, to carry state), or a type implementing
//! [`Handler`] to override the defaults: a timeout, a [`RetryPolicy`], and
//! an `on_dead` step. Inside the worker every handler is erased to
//! `ErasedHandler`, which decodes the payload and boxes the future.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use spool_core::{Payload, Task};

use crate::context::Context;
use crate::error::TaskError;
use crate::job::{self, Job};

/// Runs tasks of kind `J::KIND`.
///
/// Only `run` is required. Delivery is at least once, so `run` must be
/// idempotent: it can run again after a crash or a lost ack.
pub trait Handler<J: Job>: Send + Sync + 'static {
    /// Does the work. `Ok` acks the task; see [`TaskError`] for the rest.
    fn run(&self, ctx: Context, job: J) -> impl Future<Output = Result<(), TaskError>> + Send;

    /// A limit on each run, besides the lease: the run is cut off at
    /// whichever comes first. None by default.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// How failures are retried. By default as the queue says.
    fn retry(&self) -> RetryPolicy {
        RetryPolicy::default()
    }

    /// Runs once after a failure of this worker made the task dead: the
    /// "emergency completion" step (mark the email undeliverable, tell the
    /// user). `task` is the dead task with its recorded errors. Does not run
    /// for a task that went dead through a lease expiry (a crashed worker),
    /// nor for one whose payload does not decode.
    fn on_dead(&self, task: Task, job: J) -> impl Future<Output = ()> + Send {
        let _ = (task, job);
        async {}
    }
}

impl<J, F, Fut> Handler<J> for F
where
    J: Job,
    F: Fn(Context, J) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), TaskError>> + Send + 'static,
{
    fn run(&self, ctx: Context, job: J) -> impl Future<Output = Result<(), TaskError>> + Send {
        self(ctx, job)
    }
}

/// When a failed task runs again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Backoff {
    /// The queue's backoff, computed by the store (docs/spec.md §3).
    #[default]
    Queue,
    /// `min(base * 2^(attempt-1), max)`, ±10% jitter.
    Exponential {
        /// The delay after the first failed attempt.
        base: Duration,
        /// The longest delay before jitter.
        max: Duration,
    },
    /// Always the same delay.
    Fixed(Duration),
}

/// How a handler's failures are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RetryPolicy {
    /// Dead after this many attempts, if fewer than the task's own
    /// `max_attempts`.
    pub max_attempts: Option<u32>,
    /// When a failed task runs again; default the queue's backoff.
    pub backoff: Backoff,
}

impl RetryPolicy {
    /// Dead after attempt `n` fails, if that comes before the task's own
    /// `max_attempts`.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }

    /// Retries after `base`, doubling per failed attempt up to `max`, with
    /// ±10% jitter.
    pub fn exponential(mut self, base: Duration, max: Duration) -> Self {
        self.backoff = Backoff::Exponential { base, max };
        self
    }

    /// Retries after `delay` every time.
    pub fn fixed(mut self, delay: Duration) -> Self {
        self.backoff = Backoff::Fixed(delay);
        self
    }

    /// The delay before the retry after failed attempt `attempt`, or `None`
    /// for the store's own backoff.
    pub(crate) fn delay(&self, attempt: u32) -> Option<Duration> {
        match self.backoff {
            Backoff::Queue => None,
            Backoff::Exponential { base, max } => {
                Some(spool_core::backoff::delay(attempt, base, max))
            }
            Backoff::Fixed(d) => Some(d),
        }
    }

    /// Whether failed attempt `attempt` was the last this policy allows.
    pub(crate) fn exhausted(&self, attempt: u32) -> bool {
        self.max_attempts.is_some_and(|m| attempt >= m)
    }
}

/// A handler with its job type erased, as the worker keeps it.
pub(crate) trait ErasedHandler: Send + Sync {
    fn timeout(&self) -> Option<Duration>;
    fn retry(&self) -> RetryPolicy;
    /// The run's future, or why the payload does not decode.
    fn run(
        &self,
        ctx: Context,
        payload: &Payload,
    ) -> Result<BoxFuture<'static, Result<(), TaskError>>, serde_json::Error>;
    /// The `on_dead` step, or `None` when the payload does not decode.
    fn on_dead(&self, task: Task) -> Option<BoxFuture<'static, ()>>;
}

pub(crate) struct Typed<J, H> {
    handler: Arc<H>,
    _job: PhantomData<fn() -> J>,
}

impl<J: Job, H: Handler<J>> Typed<J, H> {
    pub(crate) fn erase(handler: H) -> Arc<dyn ErasedHandler> {
        Arc::new(Typed {
            handler: Arc::new(handler),
            _job: PhantomData,
        })
    }
}

impl<J: Job, H: Handler<J>> ErasedHandler for Typed<J, H> {
    fn timeout(&self) -> Option<Duration> {
        self.handler.timeout()
    }

    fn retry(&self) -> RetryPolicy {
        self.handler.retry()
    }

    fn run(
        &self,
        ctx: Context,
        payload: &Payload,
    ) -> Result<BoxFuture<'static, Result<(), TaskError>>, serde_json::Error> {
        let job: J = job::decode(payload)?;
        let handler = self.handler.clone();
        Ok(async move { handler.run(ctx, job).await }.boxed())
    }

    fn on_dead(&self, task: Task) -> Option<BoxFuture<'static, ()>> {
        let job: J = job::decode(&task.payload).ok()?;
        let handler = self.handler.clone();
        Some(async move { handler.on_dead(task, job).await }.boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_pick_the_delay() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(3), None);
        assert!(!p.exhausted(1000));
        let p = RetryPolicy::default()
            .fixed(Duration::from_secs(2))
            .max_attempts(3);
        assert_eq!(p.delay(1), Some(Duration::from_secs(2)));
        assert!(!p.exhausted(2));
        assert!(p.exhausted(3));
        let p = RetryPolicy::default().exponential(Duration::from_secs(1), Duration::from_secs(4));
        let d = p.delay(10).unwrap_or_default();
        assert!(d >= Duration::from_millis(3600) && d <= Duration::from_millis(4400));
    }
}
