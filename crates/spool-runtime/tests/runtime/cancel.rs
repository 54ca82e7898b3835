//! Cancelling a running task through `Client::cancel` reaches its handler
//! (docs/spec.md §6): the worker's lease watcher hears of the cancel within
//! 100 ms, the run's cancellation token fires, its future is dropped,
//! nothing is reported for it, and its slot goes to the next task. On the
//! embedded engine, and over a real server through `RemoteStore` (HTTP)
//! and `RespStore` (RESP). `Client::cancel_key` cancels by idempotency
//! key, and a holder's late ack is refused.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use spool_client::RespStore;
use spool_core::{Ack, ClaimRequest, Store, StoreError, TaskId, TaskRef};
use spool_runtime::{
    Client, Context, EnqueueError, EnqueueOptions, Handler, Job, QueueConfig, TaskError, Worker,
};
use spool_server::RespLimits;
use tokio::sync::mpsc;

use crate::support::{eventually, q, remote, Embedded, Server};

/// How soon after the cancel's answer the handler's token must fire.
const NOTICE: Duration = Duration::from_millis(100);

#[derive(Serialize, Deserialize)]
struct Long;

impl Job for Long {
    const KIND: &'static str = "long";
}

/// Runs for a minute unless cut off; tells when it starts and when its
/// token fires.
#[derive(Clone)]
struct Patient {
    started: mpsc::UnboundedSender<TaskId>,
    cut: mpsc::UnboundedSender<(TaskId, Instant)>,
    finished: Arc<Mutex<Vec<TaskId>>>,
}

impl Handler<Long> for Patient {
    async fn run(&self, ctx: Context, _job: Long) -> Result<(), TaskError> {
        let (id, token, cut) = (ctx.id(), ctx.cancellation().clone(), self.cut.clone());
        tokio::spawn(async move {
            token.cancelled().await;
            let _ = cut.send((id, Instant::now()));
        });
        let _ = self.started.send(id);
        tokio::time::sleep(Duration::from_secs(60)).await;
        self.finished.lock().unwrap().push(id);
        Ok(())
    }
}

async fn a_cancel_reaches_the_running_handler(store: Arc<dyn Store>) {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (cut_tx, mut cut) = mpsc::unbounded_channel();
    let finished = Arc::new(Mutex::new(Vec::new()));
    let handler = Patient {
        started: started_tx,
        cut: cut_tx,
        finished: finished.clone(),
    };
    // One slot: the next task runs only once the cancelled run let go.
    let worker = Worker::builder(store.clone())
        .queue("long", QueueConfig::new().concurrency(1))
        .register(handler)
        .start()
        .unwrap();
    let client = Client::new(store.clone());
    let first = client.enqueue(Long).await.unwrap().id;
    let second = client.enqueue(Long).await.unwrap().id;
    let running = tokio::time::timeout(Duration::from_secs(5), started.recv()).await;
    assert_eq!(running.unwrap(), Some(first));
    // Let the watcher's long poll settle on the lease, so the cancel has
    // to wake it rather than be found by its first look.
    tokio::time::sleep(Duration::from_millis(300)).await;

    client.cancel(first).await.unwrap();
    let cancelled_at = Instant::now();
    let (id, fired_at) = tokio::time::timeout(Duration::from_secs(5), cut.recv())
        .await
        .expect("the handler's token fired")
        .unwrap();
    assert_eq!(id, first);
    let late = fired_at.saturating_duration_since(cancelled_at);
    assert!(
        late < NOTICE,
        "the handler heard of the cancel {late:?} later"
    );

    let next = tokio::time::timeout(Duration::from_secs(5), started.recv()).await;
    assert_eq!(
        next.unwrap(),
        Some(second),
        "the slot went to the next task"
    );
    eventually(
        Duration::from_secs(2),
        "the first task stays gone",
        || async { store.get(TaskRef::Id(first)).await.is_err() },
    )
    .await;
    assert!(finished.lock().unwrap().is_empty(), "the cut run went on");
    let report = worker.shutdown(Duration::from_millis(100)).await;
    assert_eq!(report.released, 1, "the second task is given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_reaches_the_handler_on_the_embedded_engine() {
    let e = Embedded::open();
    a_cancel_reaches_the_running_handler(e.store.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_reaches_the_handler_over_http() {
    let server = Server::builder().start().await;
    a_cancel_reaches_the_running_handler(remote(&server)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_reaches_the_handler_over_resp() {
    let server = Server::builder().resp(RespLimits::default()).start().await;
    let addr = server.resp.expect("a RESP listener");
    a_cancel_reaches_the_running_handler(Arc::new(RespStore::new(addr.to_string(), None))).await;
}

#[tokio::test]
async fn a_leased_task_is_cancelled_by_key_and_its_late_ack_refused() {
    let e = Embedded::open();
    let client = Client::new(e.store.clone());
    let options = EnqueueOptions::new().key("report:2026-11");
    let id = client.enqueue_with(Long, options).await.unwrap().id;
    let claimed = e
        .store
        .claim(ClaimRequest::new(q("long"), "holder"))
        .await
        .unwrap();
    let token = claimed[0].lease.as_ref().unwrap().token;
    assert_eq!(claimed[0].id, id);

    client.cancel_key("long", "report:2026-11").await.unwrap();
    let late = e.store.ack(id, token, Ack::Done).await;
    assert!(matches!(late, Err(StoreError::NotFound)), "{late:?}");
    assert!(matches!(
        e.store.get(TaskRef::Id(id)).await,
        Err(StoreError::NotFound)
    ));
    // Nothing left to cancel, by key or by id; a bad key is refused
    // before the store is asked.
    let again = client.cancel_key("long", "report:2026-11").await;
    assert!(
        matches!(again, Err(EnqueueError::Store(StoreError::NotFound))),
        "{again:?}"
    );
    let unknown = client.cancel(id).await;
    assert!(
        matches!(unknown, Err(EnqueueError::Store(StoreError::NotFound))),
        "{unknown:?}"
    );
    assert!(matches!(
        client.cancel_key("long", "").await,
        Err(EnqueueError::Name(_))
    ));
}
