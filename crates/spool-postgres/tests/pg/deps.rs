//! Dependencies across processes (docs/spec.md §3.2; README.md,
//! "Dependencies"): a parent ending through one store releases its child
//! for a claim waiting in another store on the same schema, woken by the
//! NOTIFY of the release; and many parents of one child acked at once
//! from two stores release it exactly once, with every ending counted.

use std::time::{Duration, Instant};

use crate::common::{connect, fresh_schema, test_config, DropSchema};
use spool_core::{
    Ack, ClaimRequest, NewTask, Parent, ParentFailure, Payload, QueueName, Store, TaskId, TaskRef,
    TaskState,
};

fn job() -> NewTask {
    NewTask::new(Payload::json("{}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_on_one_node_wakes_a_claim_for_the_child_on_another() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    // A fallback poll far longer than the wait allowed: only the release's
    // notification can wake the claimer in time.
    let config = || {
        let mut c = test_config(&schema);
        c.poll_interval = Duration::from_secs(30);
        c
    };
    let (first, second) = (connect(config()).await, connect(config()).await);
    let parents = QueueName::new("parents").unwrap();
    let children = QueueName::new("children").unwrap();
    let parent = first.enqueue(&parents, vec![job()]).await.unwrap()[0].id;
    let child = second
        .enqueue(&children, vec![job().after(Parent::Task(parent))])
        .await
        .unwrap()[0]
        .id;
    assert_eq!(
        first.get(TaskRef::Id(child)).await.unwrap().state,
        TaskState::Pending
    );

    let waiting = {
        let (second, children) = (second.clone(), children.clone());
        tokio::spawn(async move {
            let req = ClaimRequest::new(children, "w").wait(Duration::from_secs(20));
            let got = second.claim(req).await.unwrap();
            (got, Instant::now())
        })
    };
    // Let the claim look once, find nothing (the child is pending) and sleep.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let leased = first
        .claim(ClaimRequest::new(parents, "w").max(1))
        .await
        .unwrap();
    let token = leased[0].lease.as_ref().unwrap().token;
    let acked_at = Instant::now();
    first.ack(parent, token, Ack::Done).await.unwrap();

    let (got, woke_at) = waiting.await.unwrap();
    assert_eq!(got.iter().map(|t| t.id).collect::<Vec<_>>(), vec![child]);
    let deps = got[0].deps.as_ref().unwrap();
    assert_eq!((deps.completed(), deps.failed), (1, 0));
    let waited = woke_at.duration_since(acked_at);
    assert!(waited < Duration::from_secs(1), "woken after {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parents_acked_at_once_from_two_nodes_release_their_callback_once() {
    const PARENTS: usize = 200;
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let (a, b) = (
        connect(test_config(&schema)).await,
        connect(test_config(&schema)).await,
    );
    let q = QueueName::new("batch").unwrap();
    let mut batch: Vec<NewTask> = (0..PARENTS).map(|_| job()).collect();
    let callback = (0..PARENTS as u32)
        .fold(job().priority(10), |t, i| t.after(Parent::InBatch(i)))
        .if_parent_fails(ParentFailure::Run);
    batch.push(callback);
    let made = a.enqueue(&q, batch).await.unwrap();
    let callback = made[PARENTS].id;

    // Every parent leased first, then acked from both nodes at once: eight
    // workers, four a node, one ack a call.
    let mut leases: Vec<(TaskId, spool_core::LeaseToken)> = Vec::new();
    while leases.len() < PARENTS {
        let got = a
            .claim(ClaimRequest::new(q.clone(), "w").max(100))
            .await
            .unwrap();
        assert!(!got.is_empty(), "the parents are claimable");
        for t in got {
            assert_ne!(t.id, callback, "the callback waits for every parent");
            leases.push((t.id, t.lease.unwrap().token));
        }
    }
    let workers: Vec<_> = leases
        .chunks(PARENTS / 8)
        .enumerate()
        .map(|(i, items)| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let items = items.to_vec();
            tokio::spawn(async move {
                for (id, token) in items {
                    store.ack(id, token, Ack::Done).await.unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }

    let claimed = b
        .claim(ClaimRequest::new(q.clone(), "w").max(10))
        .await
        .unwrap();
    assert_eq!(
        claimed.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![callback],
        "the callback, once"
    );
    let deps = claimed[0].deps.as_ref().unwrap();
    assert!(deps.waiting_on.is_empty());
    assert_eq!(
        (deps.after.len(), deps.completed() as usize, deps.failed),
        (PARENTS, PARENTS, 0)
    );
    let stats = a.stats().await.unwrap();
    let counts = stats.iter().find(|s| s.name == q).unwrap().counts;
    assert_eq!((counts.total(), counts.leased), (1, 1));
}
