//! Prometheus metrics (`spool_*`, docs/spec.md §7.1).
//!
//! Counters and histograms are recorded through the `metrics` facade as
//! things happen, so metrics of other crates (the engine's fsync timings)
//! land in the same registry. Per-queue task gauges are not kept up to date
//! on every change: they are refreshed from the store's `stats` at each
//! scrape, which is exact and costs nothing between scrapes.
//!
//! The recorder is process-wide (the facade allows one): the first server to
//! start installs it; later servers in the same process share it.
//!
//! Label values are bounded, since every distinct value is a series kept
//! forever: HTTP methods are the standard ones or `other` (a client may
//! send any token as a method), and a queue is named only once it is known
//! to exist (in `stats`, enqueued to, or a task of it seen), up to
//! [`MAX_QUEUE_LABELS`]; claims on made-up names count under `other`.
//! A task's group is never a label (groups are often customer ids, without
//! bound): a queue's groups show as the backlog of its busiest one, and
//! the groups endpoint lists them all.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock, PoisonError};

use axum::http::Method;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use spool_core::{GroupStats, QueueName, QueueStats, TaskState};

pub(crate) const TASKS: &str = "spool_tasks";
pub(crate) const OLDEST_READY_AGE: &str = "spool_queue_oldest_ready_age_seconds";
pub(crate) const PAUSED: &str = "spool_queue_paused";
pub(crate) const GROUP_BACKLOG_MAX: &str = "spool_queue_group_backlog_max";
pub(crate) const ENQUEUED: &str = "spool_tasks_enqueued_total";
pub(crate) const COMPLETED: &str = "spool_tasks_completed_total";
pub(crate) const FAILED: &str = "spool_tasks_failed_total";
pub(crate) const DEAD: &str = "spool_tasks_dead_total";
pub(crate) const CLAIMED: &str = "spool_tasks_claimed_total";
pub(crate) const CLAIM_DURATION: &str = "spool_claim_duration_seconds";
pub(crate) const HTTP_REQUESTS: &str = "spool_http_requests_total";
pub(crate) const HTTP_DURATION: &str = "spool_http_request_duration_seconds";

/// Histogram buckets in seconds: 100 µs .. 30 s (the longest long poll).
const BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Most queues named in labels; more count under `other`.
pub(crate) const MAX_QUEUE_LABELS: usize = 1000;

/// The label value of anything not named.
const OTHER: &str = "other";

static QUEUES: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();

/// The `queue` label of `queue`: its name if it is known, or if `exists`
/// (which makes it known) and there is room; else `other`.
pub(crate) fn queue_label(queue: &str, exists: bool) -> String {
    let mut known = QUEUES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if known.contains(queue) {
        return queue.to_string();
    }
    if exists && known.len() < MAX_QUEUE_LABELS {
        known.insert(queue.to_string());
        return queue.to_string();
    }
    OTHER.to_string()
}

/// The `method` label: a standard method's name, else `other`.
pub(crate) fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => OTHER,
    }
}

/// The process's Prometheus registry, installed on first use.
pub(crate) fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS);
        // Bucket values are constants and valid; an error here would only
        // mean no buckets, which renders summaries instead.
        let builder = match builder {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "histogram buckets refused");
                PrometheusBuilder::new()
            }
        };
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed; /metrics shows only gauges");
        }
        describe();
        handle
    })
}

fn describe() {
    metrics::describe_gauge!(
        TASKS,
        "Tasks per queue and state, from the store at scrape time."
    );
    metrics::describe_gauge!(
        OLDEST_READY_AGE,
        "How long the oldest ready task of a queue has been claimable."
    );
    metrics::describe_gauge!(PAUSED, "1 when the queue is paused.");
    metrics::describe_gauge!(
        GROUP_BACKLOG_MAX,
        "Tasks waiting in the queue's busiest group (0 without groups)."
    );
    metrics::describe_counter!(ENQUEUED, "Tasks created (duplicates not counted).");
    metrics::describe_counter!(COMPLETED, "Tasks acked (completed or re-armed).");
    metrics::describe_counter!(FAILED, "Failures reported by workers.");
    metrics::describe_counter!(DEAD, "Failures that made a task dead.");
    metrics::describe_counter!(CLAIMED, "Tasks handed to workers.");
    metrics::describe_histogram!(
        CLAIM_DURATION,
        "Time a claim took, long-poll wait included."
    );
    metrics::describe_counter!(HTTP_REQUESTS, "HTTP requests by route and status.");
    metrics::describe_histogram!(HTTP_DURATION, "HTTP request latency by route.");
}

/// Sets the per-queue gauges from a fresh `stats`.
pub(crate) fn refresh_gauges(stats: &[QueueStats]) {
    for q in stats {
        let queue = queue_label(q.name.as_str(), true);
        for state in TaskState::ALL {
            metrics::gauge!(TASKS, "queue" => queue.clone(), "state" => state.as_str())
                .set(q.counts.get(state) as f64);
        }
        let age = q.oldest_ready_age.map_or(0.0, |d| d.as_secs_f64());
        metrics::gauge!(OLDEST_READY_AGE, "queue" => queue.clone()).set(age);
        metrics::gauge!(PAUSED, "queue" => queue).set(if q.paused { 1.0 } else { 0.0 });
    }
}

/// Sets a queue's group gauge from its busiest group, if it has one.
pub(crate) fn refresh_group_gauge(queue: &QueueName, busiest: Option<&GroupStats>) {
    let queue = queue_label(queue.as_str(), true);
    let waiting = busiest.map_or(0.0, |g| g.waiting as f64);
    metrics::gauge!(GROUP_BACKLOG_MAX, "queue" => queue).set(waiting);
}

/// The text exposition of every metric.
pub(crate) fn render() -> String {
    handle().render()
}
