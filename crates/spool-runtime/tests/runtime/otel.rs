//! With the `otel` feature, each run is exported as an OpenTelemetry
//! consumer span named `process <queue>` with the messaging attributes,
//! and a failed run has an error status.

use std::time::Duration;

use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};
use spool_runtime::{Client, Context, Job, TaskError, Worker};
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

// A current-thread runtime: the subscriber set for this thread sees every run.
#[tokio::test]
async fn runs_are_exported_as_consumer_spans() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = spool_runtime::otel::layer().with_tracer(provider.tracer("spool-test"));
    let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

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
