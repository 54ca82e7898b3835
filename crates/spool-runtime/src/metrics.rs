//! The runtime's metrics, recorded through the `metrics` facade: install a
//! recorder (Prometheus, ...) before starting workers to see them.
//!
//! Per queue (label `queue`): runs started, failures, retries, dead,
//! snoozes, releases, run duration and queue wait (how long a task was ready
//! before a run started, on the store's clock). Per schedule (label
//! `schedule`): ticks fired and how late they fired. Names are distinct
//! from the server's (`spool_tasks_*`), so a process that runs both counts
//! nothing twice.

use metrics::{counter, histogram, Counter, Histogram};
use spool_core::QueueName;

/// Runs started.
pub const RUNS: &str = "spool_runs_total";
/// Runs that ended in an error, a panic or at the deadline.
pub const FAILURES: &str = "spool_run_failures_total";
/// Failures after which the task will run again.
pub const RETRIES: &str = "spool_run_retries_total";
/// Failures after which the task is dead.
pub const DEAD: &str = "spool_run_dead_total";
/// Runs that asked to run again later without counting the attempt.
pub const SNOOZES: &str = "spool_run_snoozes_total";
/// Tasks given back unrun or unfinished at shutdown.
pub const RELEASES: &str = "spool_run_releases_total";
/// Seconds from the start of a run to its end.
pub const RUN_DURATION: &str = "spool_run_duration_seconds";
/// Seconds a task was claimable before its run started.
pub const QUEUE_WAIT: &str = "spool_queue_wait_seconds";
/// Ticks this process fired (another process may have fired the rest).
pub const TICKS_FIRED: &str = "spool_schedule_ticks_fired_total";
/// Seconds between a tick's time and its firing, on the store's clock.
pub const FIRE_DELAY: &str = "spool_schedule_fire_delay_seconds";

/// One queue's metric handles, looked up once: the run path is hot.
#[derive(Clone, Debug)]
pub(crate) struct QueueMetrics {
    pub runs: Counter,
    pub failures: Counter,
    pub retries: Counter,
    pub dead: Counter,
    pub snoozes: Counter,
    pub releases: Counter,
    pub duration: Histogram,
    pub wait: Histogram,
}

impl QueueMetrics {
    pub(crate) fn new(queue: &QueueName) -> Self {
        let q = queue.to_string();
        QueueMetrics {
            runs: counter!(RUNS, "queue" => q.clone()),
            failures: counter!(FAILURES, "queue" => q.clone()),
            retries: counter!(RETRIES, "queue" => q.clone()),
            dead: counter!(DEAD, "queue" => q.clone()),
            snoozes: counter!(SNOOZES, "queue" => q.clone()),
            releases: counter!(RELEASES, "queue" => q.clone()),
            duration: histogram!(RUN_DURATION, "queue" => q.clone()),
            wait: histogram!(QUEUE_WAIT, "queue" => q),
        }
    }
}
