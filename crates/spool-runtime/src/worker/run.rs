//! One run: decode, call the handler under its deadline, report the
//! outcome, and run `on_dead` when the failure made the task dead.
//!
//! The run is a Tokio task holding one of the pool's slots until its outcome
//! is handed over. Its handler future is raced against the deadline,
//! against the loss of its lease (the lease watcher's word, or a refused
//! heartbeat) and against a shutdown that ran out of time: the first to
//! finish wins, and a losing handler future is dropped (cancellation is cooperative: a handler
//! that never yields cannot be cut off). A panic, in the handler's
//! synchronous prelude or in its future, is caught and is a failure.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use spool_core::{FailRequest, Task, TaskResult, TaskState};
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument;

use super::pool::Pool;
use super::report::Reporter;
use super::span;
use crate::context::Context;
use crate::error::{chain, Action, TaskError};
use crate::handler::ErasedHandler;

/// The message recorded for a run cut off at its deadline.
pub(crate) const DEADLINE_EXCEEDED: &str = "deadline exceeded";

enum Outcome {
    Done,
    Failed(TaskError),
    Panicked(String),
    DeadlineExceeded,
    /// The lease was lost (the task cancelled, or held by another worker
    /// now): nothing is reported, as the store would refuse it.
    LeaseLost,
    Undecodable(String),
    /// Cut off by a shutdown that ran out of time.
    Abandoned,
}

/// Runs `task` and reports it; frees the slot when done.
pub(crate) async fn run(pool: Arc<Pool>, task: Task, slot: OwnedSemaphorePermit) {
    let span = span::for_run(&task);
    execute(&pool, task).instrument(span).await;
    drop(slot);
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string payload");
    format!("panicked: {what}")
}

async fn execute(pool: &Pool, task: Task) {
    let shared = &pool.shared;
    let Some((token, expires_at)) = task.lease.as_ref().map(|l| (l.token, l.expires_at)) else {
        tracing::error!("the store handed out a task without a lease");
        return;
    };
    let clock = shared.clock.read();
    let now = clock.store_now();
    let expires = clock.instant_of(expires_at);
    pool.metrics.runs.increment(1);
    pool.metrics
        .wait
        .record(now.since(task.run_at).as_secs_f64());
    let mut report = Reporter {
        pool,
        id: task.id,
        token,
        expires,
    };
    let Some(handler) = pool.handlers.get(&task.kind).cloned() else {
        let message = format!("no handler for kind {} in worker {}", task.kind, shared.id);
        tracing::warn!("{message}");
        pool.metrics.failures.increment(1);
        span::outcome("failed");
        record_failure(pool, &report, FailRequest::new(message)).await;
        return;
    };
    // What `heartbeat` extends by: the task's own lease, else the one the
    // pool claims with, else what the store granted.
    let lease_len = task
        .lease_ms
        .map(Duration::from_millis)
        .or(pool.config.lease)
        .unwrap_or_else(|| expires_at.since(now));
    let attempt = task.attempt;
    let started = clock.local;
    let ctx = Context::new(
        task,
        token,
        shared.store.clone(),
        shared.clock.clone(),
        (lease_len, expires),
        handler.timeout(),
        started,
    );
    let watched = shared.leases.hold(&ctx);
    let mut outcome = call(handler.as_ref(), &ctx, pool).await;
    // From here the task may go by this run's own report: no loss.
    drop(watched);
    // A handler may finish on seeing its token fire; the store would refuse
    // its report all the same.
    if ctx.is_lease_lost() {
        outcome = Outcome::LeaseLost;
    }
    pool.metrics
        .duration
        .record(started.elapsed().as_secs_f64());
    if matches!(outcome, Outcome::DeadlineExceeded | Outcome::Abandoned) {
        ctx.cancel();
    }
    // Heartbeats may have moved the lease.
    report.expires = ctx.lease_expiry();
    let result = ctx.take_result();
    conclude(pool, &report, handler.as_ref(), attempt, outcome, result).await;
}

/// Reports how the run ended (an ack with the result the run set), and
/// runs `on_dead` if it made the task dead.
async fn conclude(
    pool: &Pool,
    report: &Reporter<'_>,
    handler: &dyn ErasedHandler,
    attempt: u32,
    outcome: Outcome,
    result: Option<TaskResult>,
) {
    let shared = &pool.shared;
    let (message, discard, after) = match outcome {
        Outcome::Done => {
            span::outcome("ok");
            report.ack(result).await;
            return;
        }
        Outcome::LeaseLost => {
            span::outcome("lease_lost");
            return;
        }
        Outcome::Abandoned => {
            span::outcome("released");
            if report.release().await {
                pool.metrics.releases.increment(1);
                shared.released.fetch_add(1, Ordering::SeqCst);
            }
            return;
        }
        Outcome::Failed(TaskError {
            action: Action::Snooze(delay),
        }) => {
            span::outcome("snoozed");
            if report.snooze(shared.clock.now().plus(delay)).await {
                pool.metrics.snoozes.increment(1);
            }
            return;
        }
        Outcome::Failed(TaskError {
            action: Action::Retry { error, after },
        }) => (chain(error.as_ref()), false, after),
        Outcome::Failed(TaskError {
            action: Action::Permanent(error),
        }) => (chain(error.as_ref()), true, None),
        Outcome::Panicked(m) => (m, false, None),
        Outcome::DeadlineExceeded => (DEADLINE_EXCEEDED.to_string(), false, None),
        Outcome::Undecodable(m) => (m, true, None),
    };
    tracing::debug!(error = %message, "run failed");
    span::outcome("failed");
    pool.metrics.failures.increment(1);
    let policy = handler.retry();
    let discard = discard || policy.exhausted(attempt);
    let retry_at = after
        .or_else(|| policy.delay(attempt))
        .map(|d| shared.clock.now().plus(d));
    let req = FailRequest {
        message,
        retry_at,
        discard,
    };
    if let Some(dead) = record_failure(pool, report, req).await {
        run_on_dead(handler, dead, pool).await;
    }
}

/// The handler's future under the deadline and the shutdown.
async fn call(handler: &dyn ErasedHandler, ctx: &Context, pool: &Pool) -> Outcome {
    let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
        handler.run(ctx.clone(), &ctx.task().payload)
    }));
    let future = match started {
        Err(panic) => return Outcome::Panicked(panic_message(panic.as_ref())),
        Ok(Err(e)) => {
            return Outcome::Undecodable(format!(
                "cannot decode the payload as {}: {e}",
                ctx.kind()
            ))
        }
        Ok(Ok(f)) => f,
    };
    tokio::select! {
        biased;
        r = AssertUnwindSafe(future).catch_unwind() => match r {
            Ok(Ok(())) => Outcome::Done,
            Ok(Err(e)) => Outcome::Failed(e),
            Err(panic) => Outcome::Panicked(panic_message(panic.as_ref())),
        },
        () = ctx.deadline_reached() => Outcome::DeadlineExceeded,
        () = ctx.lease_lost() => Outcome::LeaseLost,
        () = pool.shared.abandon.cancelled() => Outcome::Abandoned,
    }
}

/// Fails the task; returns it when it is now dead.
async fn record_failure(pool: &Pool, report: &Reporter<'_>, req: FailRequest) -> Option<Task> {
    let task = report.fail(req).await?;
    if task.state == TaskState::Dead {
        pool.metrics.dead.increment(1);
        let error = task.errors.last().map_or("", |e| e.message.as_str());
        tracing::warn!(error, "task is dead");
        Some(task)
    } else {
        pool.metrics.retries.increment(1);
        None
    }
}

async fn run_on_dead(handler: &dyn ErasedHandler, dead: Task, pool: &Pool) {
    let Some(step) = handler.on_dead(dead) else {
        tracing::warn!("on_dead skipped: the payload does not decode");
        return;
    };
    tokio::select! {
        r = AssertUnwindSafe(step).catch_unwind() => {
            if let Err(panic) = r {
                tracing::error!("on_dead {}", panic_message(panic.as_ref()));
            }
        }
        () = pool.shared.abandon.cancelled() => {
            tracing::warn!("on_dead cut off by the shutdown");
        }
    }
}
