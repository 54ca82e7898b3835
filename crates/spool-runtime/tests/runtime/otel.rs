//! With the `otel` feature, each run is exported as an OpenTelemetry
//! consumer span named `process <queue>` with the messaging attributes,
//! and a failed run has an error status; a task's traceparent is the parent
//! of the span of each of its attempts.

use std::time::Duration;

use opentelemetry::trace::{
    SpanId, SpanKind, Status, TraceContextExt as _, TraceId, TracerProvider as _,
};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};
use spool_runtime::{Client, Context, EnqueueOptions, Job, TaskError, Worker};
use tracing::subscriber::DefaultGuard;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt;

use crate::support::{eventually, fast_queue, remaining};

#[derive(Serialize, Deserialize)]
struct Traced {
    fail: bool,
}

impl Job for Traced {
    const KIND: &'static str = "traced";
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

/// An exporter that keeps spans, set as this thread's subscriber until the
/// guard drops (a current-thread runtime: every run is on this thread).
fn exporting() -> (InMemorySpanExporter, DefaultGuard) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = spool_runtime::otel::layer().with_tracer(provider.tracer("spool-test"));
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    (exporter, guard)
}

#[tokio::test]
async fn runs_are_exported_as_consumer_spans() {
    let (exporter, _subscriber) = exporting();

    let e = crate::support::Embedded::open();
    fast_queue(e.store.as_ref(), "traced", 1).await;
    let worker = Worker::builder(e.store.clone())
        .register(|_ctx: Context, job: Traced| async move {
            if job.fail {
                return Err(TaskError::permanent("refused"));
            }
            Ok(())
        })
        .start()
        .unwrap();
    let client = Client::new(e.store.clone());
    let ok = client.enqueue(Traced { fail: false }).await.unwrap().id;
    let failed = client.enqueue(Traced { fail: true }).await.unwrap().id;
    eventually(Duration::from_secs(5), "both ran", || async {
        remaining(e.store.as_ref(), "traced").await == 1
            && exporter.get_finished_spans().unwrap().len() >= 2
    })
    .await;
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);

    let spans = exporter.get_finished_spans().unwrap();
    let find = |id: spool_core::TaskId| {
        spans
            .iter()
            .find(|s| attribute(s, "messaging.message.id") == Some(Value::from(id.to_string())))
            .unwrap()
    };
    let good = find(ok);
    assert_eq!(good.name, "process traced");
    assert_eq!(good.span_kind, SpanKind::Consumer);
    assert_eq!(good.status, Status::Ok);
    assert_eq!(
        attribute(good, "messaging.system"),
        Some(Value::from("spool"))
    );
    assert_eq!(
        attribute(good, "messaging.destination.name"),
        Some(Value::from("traced"))
    );
    assert_eq!(attribute(good, "kind"), Some(Value::from("traced")));
    let attempt = attribute(good, "attempt").map(|v| v.as_str().into_owned());
    assert_eq!(attempt.as_deref(), Some("1"));
    assert_eq!(attribute(good, "outcome"), Some(Value::from("ok")));
    let bad = find(failed);
    assert!(
        matches!(bad.status, Status::Error { .. }),
        "{:?}",
        bad.status
    );
    assert_eq!(attribute(bad, "outcome"), Some(Value::from("failed")));
}

/// Fails its first attempt, so that a retry runs.
#[derive(Serialize, Deserialize)]
struct Retried;

impl Job for Retried {
    const KIND: &'static str = "retried";
}

/// Enqueues a `Retried` job with `traceparent`, lets a worker run it twice
/// and answers the spans of its two attempts, first attempt first.
async fn run_twice(exporter: &InMemorySpanExporter, traceparent: String) -> Vec<SpanData> {
    let e = crate::support::Embedded::open();
    fast_queue(e.store.as_ref(), "retried", 3).await;
    let worker = Worker::builder(e.store.clone())
        .register(|ctx: Context, _job: Retried| async move {
            if ctx.attempt() == 1 {
                return Err(TaskError::retry_after(
                    "once more",
                    Duration::from_millis(10),
                ));
            }
            Ok(())
        })
        .start()
        .unwrap();
    let options = EnqueueOptions::new().traceparent(traceparent);
    Client::new(e.store.clone())
        .enqueue_with(Retried, options)
        .await
        .unwrap();
    let runs = || {
        let mut runs: Vec<SpanData> = exporter
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .filter(|s| s.name == "process retried")
            .collect();
        runs.sort_by_key(|s| attribute(s, "attempt").map(|v| v.as_str().into_owned()));
        runs
    };
    eventually(Duration::from_secs(5), "both attempts ran", || async {
        remaining(e.store.as_ref(), "retried").await == 0 && runs().len() == 2
    })
    .await;
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);
    runs()
}

#[tokio::test]
async fn the_enqueued_traceparent_is_the_parent_of_every_attempt() {
    let (exporter, _guard) = exporting();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let runs = run_twice(&exporter, format!("00-{trace}-{parent}-01")).await;
    for (run, attempt) in runs.iter().zip(["1", "2"]) {
        let seen = attribute(run, "attempt").map(|v| v.as_str().into_owned());
        assert_eq!(seen.as_deref(), Some(attempt));
        assert_eq!(
            run.span_context.trace_id(),
            TraceId::from_hex(trace).unwrap()
        );
        assert_eq!(run.parent_span_id, SpanId::from_hex(parent).unwrap());
        assert!(run.parent_span_is_remote, "attempt {attempt}");
    }
    assert!(matches!(runs[0].status, Status::Error { .. }));
    assert_eq!(runs[1].status, Status::Ok);
}

#[tokio::test]
async fn current_traceparent_makes_the_producer_span_the_runs_parent() {
    let (exporter, _guard) = exporting();
    let request = tracing::info_span!("request");
    let traceparent = request
        .in_scope(spool_runtime::otel::current_traceparent)
        .expect("the request span has an OpenTelemetry context");
    let producer = request.context().span().span_context().clone();
    assert!(traceparent.ends_with("-01"), "{traceparent}: sampled");
    drop(request);
    assert_eq!(spool_runtime::otel::current_traceparent(), None);

    let runs = run_twice(&exporter, traceparent).await;
    for run in &runs {
        assert_eq!(run.span_context.trace_id(), producer.trace_id());
        assert_eq!(run.parent_span_id, producer.span_id());
    }
}
