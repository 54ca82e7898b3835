//! Wake-ups across processes: an enqueue through one store reaches a claim
//! waiting in another store on the same schema through NOTIFY (sent after
//! commit by the notifier), not through the fallback poll; so does a
//! schedule put or deleted, to the other store's schedulers, and a cancel,
//! to a worker waiting on its lease in the other store.

use std::time::{Duration, Instant};

use crate::common::{connect, fresh_schema, test_config, DropSchema};
use spool_core::{
    Cadence, ClaimRequest, Kind, NewTask, Payload, QueueName, QueueSettings, ScheduleSpec, Store,
    TaskRef,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_in_another_store_wakes_a_waiting_claimer() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    // A fallback poll far longer than the wait allowed below: only a
    // notification can wake the claimer in time.
    let config = || {
        let mut c = test_config(&schema);
        c.poll_interval = Duration::from_secs(30);
        c
    };
    let (waiter, producer) = (connect(config()).await, connect(config()).await);
    let q = QueueName::new("cross").unwrap();
    producer
        .put_queue(&q, QueueSettings::default().into())
        .await
        .unwrap();

    let waiting = {
        let (waiter, q) = (waiter.clone(), q.clone());
        tokio::spawn(async move {
            let req = ClaimRequest::new(q, "w").wait(Duration::from_secs(20));
            let got = waiter.claim(req).await.unwrap();
            (got, Instant::now())
        })
    };
    // Let the claim look once, find nothing and go to sleep.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let enqueued_at = Instant::now();
    let out = producer
        .enqueue(&q, vec![NewTask::new(Payload::json("{}"))])
        .await
        .unwrap();

    let (got, woke_at) = waiting.await.unwrap();
    assert_eq!(
        got.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![out[0].id]
    );
    let waited = woke_at.duration_since(enqueued_at);
    assert!(waited < Duration::from_secs(2), "woken after {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_put_or_deleted_in_another_store_is_signalled_at_once() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let (watcher, writer) = (
        connect(test_config(&schema)).await,
        connect(test_config(&schema)).await,
    );
    let mut there = watcher.schedule_changes().expect("a signal");
    let mut here = writer.schedule_changes().expect("a signal");
    // Let the watcher's LISTEN connection come up (it signals once then).
    tokio::time::sleep(Duration::from_millis(300)).await;
    there.borrow_and_update();
    let name = Kind::new("nightly").unwrap();
    let spec = ScheduleSpec {
        name: name.clone(),
        queue: QueueName::new("reports").unwrap(),
        kind: None,
        payload: Payload::default(),
        cadence: Cadence::Every(Duration::from_secs(3600)),
        deadline: None,
    };
    let within = Duration::from_secs(2);
    writer.put_schedule(spec).await.unwrap();
    assert!(here.has_changed().unwrap(), "the writer's own schedulers");
    here.borrow_and_update();
    tokio::time::timeout(within, there.changed())
        .await
        .expect("the put reached the other store")
        .unwrap();
    writer.delete_schedule(&name).await.unwrap();
    assert!(here.has_changed().unwrap());
    tokio::time::timeout(within, there.changed())
        .await
        .expect("the delete reached the other store")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_in_another_store_reaches_the_lease_holder_within_100_ms() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let (runner, operator) = (
        connect(test_config(&schema)).await,
        connect(test_config(&schema)).await,
    );
    let q = QueueName::new("long-runs").unwrap();
    let tasks = vec![NewTask::new(Payload::json("{}")); 2];
    operator.enqueue(&q, tasks).await.unwrap();
    let claimed = runner
        .claim(ClaimRequest::new(q.clone(), "w").max(2))
        .await
        .unwrap();
    let leases: Vec<_> = claimed
        .iter()
        .map(|t| (t.id, t.lease.as_ref().unwrap().token))
        .collect();
    let waiting = {
        let (runner, leases) = (runner.clone(), leases.clone());
        tokio::spawn(async move {
            let lost = runner
                .wait_leases_lost(&leases, Duration::from_secs(20))
                .await;
            (lost, Instant::now())
        })
    };
    // Let the runner's LISTEN connection come up and the wait look once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    operator.cancel(TaskRef::Id(leases[1].0)).await.unwrap();
    let cancelled_at = Instant::now();

    let (lost, woke_at) = waiting.await.unwrap();
    assert_eq!(lost.unwrap(), vec![leases[1].0]);
    let late = woke_at.saturating_duration_since(cancelled_at);
    assert!(
        late < Duration::from_millis(100),
        "learnt of it {late:?} late"
    );
}
